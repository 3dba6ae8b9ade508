"""Drawing and replay costs: SVG and rgb_array frames per second, what recording costs per tick, bytes per
recorded game and the size of its replay page.

Run: ``python bench/bench_render.py [--seconds 3] [--deals 3]`` (needs the ``render`` and ``eval`` extras).
Prints a table and writes ``bench/results/render.json``. Games for the sizes are a round robin of heuristic,
search, greedy and random (every seat rotation of ``--deals`` deals), recorded by ``run_tournament(...,
replays=DIR)`` as ``nertz-eval --replays`` does.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from common import load_average  # noqa: E402
from nertz_env.environment import parallel_env  # noqa: E402
from nertz_env.render.draw import ENV_FAN, table_rgb, table_svg  # noqa: E402
from nertz_env.replay import RecordReplay  # noqa: E402


def _midgame(players: int, ticks: int = 80) -> dict:
    env = parallel_env(num_players=players)
    obs, _ = env.reset(seed=players)
    rng = np.random.default_rng(0)
    for _ in range(ticks):
        if not env.agents:
            break
        acts = {}
        for a in env.agents:
            legal = np.flatnonzero(obs[a]["action_mask"])
            moves = legal[legal > 1]
            acts[a] = int(rng.choice(moves)) if len(moves) and rng.random() < 0.8 else int(rng.choice(legal))
        obs, *_ = env.step(acts)
    return env.snapshot()


def _rate(fn, seconds: float) -> float:  # type: ignore[no-untyped-def]
    fn()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        fn()
        n += 1
    return n / (time.perf_counter() - t0)


def _random_game(env, seed: int) -> int:  # type: ignore[no-untyped-def]
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    n = 0
    while env.agents:
        acts = {}
        for a in env.agents:
            legal = np.flatnonzero(obs[a]["action_mask"])
            acts[a] = int(legal[rng.integers(len(legal))])
        obs, *_ = env.step(acts)
        n += 1
    return n


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=3.0, help="seconds per measured loop")
    ap.add_argument("--deals", type=int, default=3, help="deals of the recorded round robin")
    args = ap.parse_args(argv)
    rows = []
    out: dict = {"frames": {}, "replays": {}}
    for p in (2, 4, 8):
        snap = _midgame(p)
        svg_rate = _rate(lambda s=snap: table_svg(s, fan=ENV_FAN), args.seconds)
        rgb_rate = _rate(lambda s=snap: table_rgb(s, fan=ENV_FAN), args.seconds)
        shape = table_rgb(snap, fan=ENV_FAN).shape
        out["frames"][p] = {"svg_per_s": svg_rate, "rgb_per_s": rgb_rate, "shape": list(shape)}
        rows.append(f"| {p} players | {shape[1]}x{shape[0]} | {svg_rate:,.0f} | {rgb_rate:,.1f} |")

    # recording overhead: random play of the same deals with and without the recorder
    with tempfile.TemporaryDirectory() as d:
        plain = parallel_env(num_players=4)
        t0 = time.perf_counter()
        ticks = sum(_random_game(plain, s) for s in range(5))
        t_plain = time.perf_counter() - t0
        rec = RecordReplay(parallel_env(num_players=4), os.path.join(d, "g{episode}.jsonl.gz"))
        t0 = time.perf_counter()
        ticks_r = sum(_random_game(rec, s) for s in range(5))
        t_rec = time.perf_counter() - t0
        assert ticks == ticks_r
        out["record_us_per_tick"] = (t_rec - t_plain) / ticks * 1e6
        out["plain_us_per_tick"] = t_plain / ticks * 1e6

    # bytes per game and page size for tournament games
    from nertz_env.eval.tournament import run_tournament
    from nertz_env.replay import load_replay
    from nertz_env.replay.cli import page_html

    with tempfile.TemporaryDirectory() as d:
        run_tournament(["heuristic", "search", "greedy", "random"], num_players=4, deals=args.deals, replays=d)
        files = sorted(Path(d).iterdir())
        sizes = [f.stat().st_size for f in files]
        ticks_per = [len(load_replay(f).ticks) for f in files]
        t0 = time.perf_counter()
        pages = [len(page_html(load_replay(f)).encode()) for f in files]
        t_page = (time.perf_counter() - t0) / len(files)
    out["replays"] = {
        "games": len(files),
        "bytes_per_game_mean": statistics.mean(sizes),
        "bytes_per_game_max": max(sizes),
        "ticks_mean": statistics.mean(ticks_per),
        "bytes_per_tick": sum(sizes) / sum(ticks_per),
        "page_kb_mean": statistics.mean(pages) / 1024,
        "page_kb_max": max(pages) / 1024,
        "page_seconds_mean": t_page,
    }
    r = out["replays"]
    table = "\n".join(
        [
            "| table | picture (px) | SVG per s | rgb_array frames per s |",
            "|---|---|---:|---:|",
            *rows,
            "",
            f"recording (RecordReplay, gzip): {out['record_us_per_tick']:.0f} us per tick on top of "
            f"{out['plain_us_per_tick']:.0f} us of random 4-player play",
            f"replays of {r['games']} round-robin games (4 players, heuristic/search/greedy/random, "
            f"{r['ticks_mean']:.0f} ticks on average): {r['bytes_per_game_mean'] / 1024:.1f} KB per game "
            f"(max {r['bytes_per_game_max'] / 1024:.1f} KB, {r['bytes_per_tick']:.0f} bytes per tick)",
            f"replay pages: {r['page_kb_mean']:.0f} KB on average (max {r['page_kb_max']:.0f} KB), "
            f"{r['page_seconds_mean']:.1f} s each to build",
            f"load average at the end: {load_average()[0]:.1f} on {os.cpu_count()} cores",
        ]
    )
    print(table)
    out["table"] = table
    res = ROOT / "bench" / "results" / "render.json"
    res.write_text(json.dumps(out, indent=1) + "\n")
    return out


if __name__ == "__main__":
    main()
