"""Single-table throughput: random masked play through ``parallel_env`` (4 players, observations and masks
built every step) and, in the same run, the same loop over other installed card-game environments.

Run: ``python bench/bench_env.py [--seconds 5]``. Prints a table, writes ``bench/out/bench_env.json``.
Agent-steps: one per agent action (a 4-player tick is 4 agent-steps; chance nodes are not counted).

``--compare REV`` times ``parallel_env`` of the git revision REV against this checkout's: REV's ``nertz_env``
is extracted to a temporary folder, and each measurement runs in a fresh process (``PYTHONPATH`` picks the
package; REV compiles into a numba cache of its own, this checkout into the caller's), old and new
alternating in pairs so both share the machine's load. It prints each pair, the medians and the median of
the paired ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


from common import MaskedSampler, fmt, load_average, print_table, save, timed_loop


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


ROOT = Path(__file__).resolve().parent.parent


def _measure_in(package_root: Path, cache: str | None, seconds: float, seed: int) -> float:
    """Agent-steps/s of :func:`nertz_parallel` in a fresh process importing the ``nertz_env`` under
    ``package_root``, with ``cache`` as its numba cache (None: the caller's)."""
    env = {**os.environ, "PYTHONPATH": str(package_root), **({"NUMBA_CACHE_DIR": cache} if cache else {})}
    cmd = [sys.executable, __file__, "--loop-only", "--seconds", str(seconds), "--seed", str(seed)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=package_root)
    lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"bench_env: the run in {package_root} failed:\n{proc.stderr[-3000:]}")
    result = json.loads(lines[-1][len("RESULT ") :])
    if not result["package"].startswith(str(package_root)):
        raise SystemExit(f"bench_env: the run in {package_root} imported {result['package']}")
    return float(result["steps_per_s"])


def compare(rev: str, sha: str, seconds: float, pairs: int, seed: int) -> dict:
    """Paired, alternating runs of REV's (commit ``sha``) ``parallel_env`` and this checkout's (see the module
    doc)."""
    with tempfile.TemporaryDirectory(prefix="bench_env_") as tmp:
        old = Path(tmp) / "old"
        old.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", sha, "nertz_env"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive.stdout, check=True)
        sides = {"old": (old, tempfile.mkdtemp(dir=tmp)), "new": (ROOT, None)}
        for root, cache in sides.values():  # compile into each side's cache, untimed
            _measure_in(root, cache, 0.2, seed)
        rates: dict[str, list[float]] = {"old": [], "new": []}
        for i in range(pairs):
            for name in ("old", "new") if i % 2 == 0 else ("new", "old"):
                rates[name].append(_measure_in(*sides[name], seconds, seed))
            print(f"  pair {i + 1}: old {fmt(rates['old'][-1])}, new {fmt(rates['new'][-1])}", flush=True)
    ratios = [n / o for o, n in zip(rates["old"], rates["new"])]  # noqa: B905 (one of each per pair)
    rows = [[str(i + 1), fmt(o), fmt(n), f"{r:.3f}"] for i, (o, n, r) in enumerate(zip(*rates.values(), ratios))]  # noqa: B905
    rows.append(
        ["median", fmt(statistics.median(rates["old"])), fmt(statistics.median(rates["new"])), f"{statistics.median(ratios):.3f}"]
    )
    load = load_average()
    table = print_table(
        f"parallel_env, 4 players, random masked play: {rev} ({sha[:7]}) against this checkout "
        f"(agent-steps/s, {seconds:g} s per run, load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} after)",
        ["pair", f"old ({sha[:7]})", "new (this checkout)", "new / old"],
        rows,
    )
    payload = {"rev": rev, "sha": sha, "rates": rates, "ratios": ratios, "table": table, "loadavg": load, "time": time.time()}
    save("bench_env_compare", payload)
    return payload


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-compile", action="store_true", help="skip the cold/warm import measurement")
    ap.add_argument("--compare", metavar="REV", help="time REV's parallel_env against this checkout's, paired")
    ap.add_argument("--pairs", type=int, default=7, help="paired old/new runs for --compare (default 7)")
    ap.add_argument("--loop-only", action="store_true", help=argparse.SUPPRESS)  # one --compare measurement
    args = ap.parse_args(argv)
    if args.pairs < 1 or args.seconds <= 0:
        ap.error("--pairs and --seconds must be positive")
    if args.loop_only:
        import nertz_env

        one = nertz_parallel(args.seconds, args.seed)
        print("RESULT " + json.dumps({"steps_per_s": one["steps_per_s"], "package": nertz_env.__file__}), flush=True)
        return one
    if args.compare:
        git = ["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet", f"{args.compare}^{{commit}}"]
        sha = subprocess.run(git, capture_output=True, text=True).stdout.strip()
        if not sha:
            ap.error(f"--compare {args.compare!r} is not a commit of {ROOT}")
        return compare(args.compare, sha, args.seconds, args.pairs, args.seed)
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
