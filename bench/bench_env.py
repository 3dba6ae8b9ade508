"""Single-table throughput: random masked play through ``parallel_env`` (4 players, observations and masks
built every step) and, in the same run, the same loop over other installed card-game environments.

Run: ``python bench/bench_env.py [--seconds 5]``. Prints a table, writes ``bench/out/bench_env.json``.
Agent-steps: one per agent action (a 4-player tick is 4 agent-steps; chance nodes are not counted).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


from common import MaskedSampler, fmt, print_table, save, timed_loop


def nertz_parallel(seconds: float, seed: int, num_players: int = 4) -> dict:
    import nertz_env

    env = nertz_env.parallel_env(num_players=num_players)
    obs, _ = env.reset(seed=seed)
    sample = MaskedSampler(seed)
    state = {"obs": obs}

    def step() -> int:
        obs = state["obs"]
        obs, *_ = env.step({a: sample(o["action_mask"]) for a, o in obs.items()})
        if not env.agents:
            obs, _ = env.reset()
        state["obs"] = obs
        return num_players

    n, dt = timed_loop(step, seconds)
    return {"name": f"nertz parallel_env ({num_players} players)", "agent_steps": n, "seconds": dt, "steps_per_s": n / dt}


def nertz_aec(seconds: float, seed: int) -> dict:
    import nertz_env

    env = nertz_env.env()
    env.reset(seed=seed)
    sample = MaskedSampler(seed)

    def step() -> int:
        obs, _, term, trunc, _ = env.last()
        env.step(None if term or trunc else sample(obs["action_mask"]))
        if not env.agents:
            env.reset()
        return 1

    n, dt = timed_loop(step, seconds)
    return {"name": "nertz env() AEC (4 players)", "agent_steps": n, "seconds": dt, "steps_per_s": n / dt}


def compile_times() -> dict:
    """The first step of a 4-player ``parallel_env`` in a fresh process with an empty numba cache (import,
    compile, reset, step), then again with that cache warm; this checkout's code (see bench_compile.py, which
    also compares checkouts side by side and breaks the compile down per function)."""
    import bench_compile

    with tempfile.TemporaryDirectory() as cache:
        cold = bench_compile.run_child(bench_compile.ROOT, cache)
        warm = bench_compile.run_child(bench_compile.ROOT, cache)
    return {
        "first_import_compile_s": cold["first_step_s"],
        "first_import_compile_cpu_s": cold["first_step_cpu_s"],
        "cached_import_s": warm["first_step_s"],
    }


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-compile", action="store_true", help="skip the cold/warm import measurement")
    args = ap.parse_args(argv)
    import competitors

    results = []
    for fn in (nertz_parallel, nertz_aec):
        results.append(fn(args.seconds, args.seed))
        print(f"  {results[-1]['name']}: {fmt(results[-1]['steps_per_s'])} agent-steps/s", flush=True)
    skipped = []
    for fn in (
        competitors.openspiel_solitaire,
        competitors.pettingzoo_gin_rummy,
        competitors.pettingzoo_leduc,
        competitors.pettingzoo_connect_four,
    ):
        try:
            r = fn(args.seconds, args.seed)
        except ImportError as e:
            r = None
            skipped.append(f"{fn.__name__}: {e}")
        if r is None:
            skipped.append(fn.__name__)
            continue
        results.append(r)
        print(f"  {r['name']}: {fmt(r['steps_per_s'])} agent-steps/s", flush=True)
    ours = results[0]["steps_per_s"]
    rows = [[r["name"], fmt(r["steps_per_s"]), f"{ours / r['steps_per_s']:.2f}x"] for r in results]
    table = print_table(
        "Single table, random masked play (agent-steps/s, same run)",
        ["environment", "agent-steps/s", "nertz parallel_env is"],
        rows,
    )
    compile_info = {} if args.skip_compile else compile_times()
    if compile_info:
        print(
            f"first parallel_env step with an empty numba cache: {compile_info['first_import_compile_s']:.1f} s "
            f"(CPU {compile_info['first_import_compile_cpu_s']:.1f} s); with the cache warm: "
            f"{compile_info['cached_import_s']:.1f} s\n"
        )
    payload = {"results": results, "skipped": skipped, "table": table, **compile_info, "time": time.time()}
    save("bench_env", payload)
    return payload


if __name__ == "__main__":
    main()
