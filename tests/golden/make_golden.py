"""Regenerate the golden pictures of tests/test_draw.py: python tests/golden/make_golden.py [--snapshots].

Without --snapshots only the SVG hashes and reference PNGs are rewritten from the committed snapshots (do that
after a deliberate change of the drawing, and look at the PNGs); with it the snapshots are dealt and played anew
too (random legal play with a fixed generator)."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # test_replay's random play
# name: (env keywords, seed, ticks of random legal play)
CASES = {
    "p2": ({"num_players": 2}, 11, 140),
    "p4_jokers": ({"num_players": 4, "jokers": 2}, 19, 90),
    "p8_w6": ({"num_players": 8, "work_piles": 6}, 3, 70),
}
SCALE = 0.5  # reference PNGs are stored at half size


def make_snapshot(kw: dict, seed: int, ticks: int) -> dict:
    from nertz_env.environment import parallel_env
    from test_replay import play

    env = parallel_env(**kw)
    play(env, seed, ticks, p_move=0.8)
    return env.snapshot()


def svg_hash(svg: str) -> str:
    return hashlib.sha256(svg.encode()).hexdigest()


def main() -> None:
    from PIL import Image

    from nertz_env.render.draw import table_rgb, table_svg

    hashes = {}
    for name, (kw, seed, ticks) in CASES.items():
        path = HERE / f"snap_{name}.json"
        if "--snapshots" in sys.argv or not path.exists():
            path.write_text(json.dumps(make_snapshot(kw, seed, ticks), indent=None) + "\n")
        snap = json.loads(path.read_text())
        hashes[name] = svg_hash(table_svg(snap))
        Image.fromarray(table_rgb(snap, scale=SCALE)).save(HERE / f"{name}_half.png", optimize=True)
    (HERE / "draw_hashes.json").write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n")
    print("wrote", ", ".join(sorted(hashes)))


if __name__ == "__main__":
    main()
