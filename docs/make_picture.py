"""Regenerate the picture of a game shown on the README and the docs' front page.

    python docs/make_picture.py            # writes docs/_static/table.svg
    python docs/make_picture.py --check    # exit 1 when the checked-in picture differs from a fresh one

Four scripted agents (two heuristic, greedy, random; no search, whose rollouts would make the picture slow
to draw) play deal 7 of the default rules for 40 ticks; the
table is drawn by ``nertz_env.render.draw.table_svg``, the drawing ``render_mode="rgb_array"``, ``nertz-replay`` and
``nertz-play`` use. The picture is deterministic: the same code draws the same bytes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent / "_static" / "table.svg"
AGENTS = ["heuristic", "heuristic", "greedy", "random"]
SEED, TICKS = 7, 40


def picture() -> str:
    from nertz_env import parallel_env
    from nertz_env.agents import make_agent
    from nertz_env.render.draw import table_svg

    env = parallel_env(num_players=4)
    obs, _ = env.reset(seed=SEED)
    agents = [make_agent(spec) for spec in AGENTS]
    for seat, agent in enumerate(agents):
        agent.reset(env.config, seat, SEED + seat)
    for _ in range(TICKS):
        if not env.agents:
            break
        actions = {
            a: agents[i].act(obs[a]["observation"], obs[a]["action_mask"])
            for i, a in enumerate(env.possible_agents) if a in env.agents
        }
        obs, *_ = env.step(actions)
    return table_svg(env.snapshot(), seat_names=AGENTS)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the checked-in picture, write nothing")
    ap.add_argument("--out", type=Path, default=OUT, help=f"where to write (default {OUT.relative_to(OUT.parents[2])})")
    args = ap.parse_args(argv)
    svg = picture()
    if args.check:
        same = args.out.exists() and args.out.read_text() == svg
        print(f"{args.out}: {'up to date' if same else 'differs from a fresh drawing: run python docs/make_picture.py'}")
        return 0 if same else 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(svg)
    print(f"wrote {args.out} ({len(svg):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
