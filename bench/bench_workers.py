"""``nertz-eval --workers 2`` against ``--workers 1`` with a trained policy at the table.

Each tournament worker used to run torch with one thread per core, so two workers on two cores ran four
busy threads: with ``ppo`` in the lineup ``--workers 2`` was 3-25x slower than ``--workers 1``. Workers now
cap themselves at one thread (:func:`nertz_env.threads.limit_threads`), and the main process plays deals too
while a worker starts (a worker spends seconds of CPU importing torch and numba's cache before its first
deal). This runs the same gauntlet
(``ppo`` against three ``heuristic`` players, 4 seat rotations per deal) as a fresh command with 1 and 2
workers, and once more with 2 workers told ``OMP_NUM_THREADS=<cores>`` (what every worker did before the
fix), and prints the times per deal and the speed-up (the before-the-fix run plays fewer deals: it is slow).
Target: 2 workers at least 1.6x faster than 1 on a 2-core machine. On a machine busy with other work a
worker's start-up takes longer in wall time (its share of the cores is smaller), so the speed-up needs more
deals to show; the table records the load average.

Run: ``python bench/bench_workers.py [--deals 360] [--before-deals 4] [--repeats 1]`` from a checkout root. Prints a Markdown
table and writes it to ``bench/results/bench_workers.md``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


def run(deals: int, workers: int, env_extra: dict[str, str], lineup: list[str]) -> tuple[float, float]:
    """Wall time of the whole command and the tournament time it prints."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    env.update(env_extra)
    cmd = [sys.executable, "-m", "nertz_env.eval.cli", "gauntlet", *lineup, "--players", "4"]
    cmd += ["--deals", str(deals), "--seed", "3", "--workers", str(workers), "--no-save", "--no-progress"]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"bench_workers: {' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    m = re.search(r"\((\d+\.\d) s, (\d+) worker", out.stdout)
    if m is None or int(m.group(2)) != workers:
        raise SystemExit(f"bench_workers: unexpected output:\n{out.stdout[-1000:]}")
    return wall, float(m.group(1))


def _spin(n: int) -> float:
    t0 = time.perf_counter()
    x = 0
    for i in range(n):
        x += i * i % 7
    return time.perf_counter() - t0


def free_cores(n: int = 3_000_000) -> float:
    """How many cores this session gets now: the same pure-Python work in 1 process, then in 2 processes
    at once (spawned like tournament workers); 2.0 on an idle 2-core machine. With Linux's autogroup
    scheduling a busy machine gives a session one share whatever its number of processes, and no worker
    count can be faster than this allows."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    with ctx.Pool(2) as pool:
        pool.map(_spin, [1000, 1000])  # started
        one = pool.apply(_spin, (n,))
        t0 = time.perf_counter()
        pool.map(_spin, [n, n], chunksize=1)
        two = time.perf_counter() - t0
    return 2.0 * one / two


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--deals", type=int, default=360, help="deals of the 1- and 2-worker runs (default 360)")
    ap.add_argument("--before-deals", type=int, default=4, help="deals of the before-the-fix run (default 4)")
    ap.add_argument("--repeats", type=int, default=1, help="runs per setting; the fastest counts (default 1)")
    args = ap.parse_args(argv)
    lineup = ["ppo", "heuristic"]
    cores = os.cpu_count() or 1
    run(1, 1, {}, lineup)  # warm-up: numba's cache and torch's import, so no timed run pays a compile
    cores_before = free_cores()
    settings = [
        ("1 worker", args.deals, 1, {}),
        ("2 workers", args.deals, 2, {}),
        (
            f"2 workers, OMP_NUM_THREADS={cores} (as before the fix)",
            args.before_deals,
            2,
            {"OMP_NUM_THREADS": str(cores)},
        ),
    ]
    rows = []
    base = None
    for name, deals, workers, extra in settings:
        wall, tour = min(
            (run(deals, workers, extra, lineup) for _ in range(args.repeats)), key=lambda x: x[1]
        )
        per_deal = tour / deals
        if base is None:
            base = per_deal
        rows.append(
            [name, str(deals), f"{wall:.1f}", f"{tour:.1f}", f"{per_deal:.2f}", f"{base / per_deal:.2f}x"]
        )
        print(f"  {name}: {tour:.1f} s for {deals} deals", file=sys.stderr, flush=True)
    cores_after = free_cores()
    header = ["setting", "deals", "command wall s", "tournament s", "s per deal", "speed-up vs 1 worker"]
    lines = [
        f"### nertz-eval gauntlet {' '.join(lineup)} --players 4 --seed 3 (4 games per deal), {cores} cores",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|",
        *("| " + " | ".join(r) + " |" for r in rows),
        "",
        "tournament s: the time nertz-eval prints (worker start-up included, interpreter start-up not).",
        f"cores this session got (2 processes of pure Python against 1; 2.00 = two free cores): "
        f"{cores_before:.2f} before, {cores_after:.2f} after.",
        f"when: {time.strftime('%Y-%m-%d %H:%M:%S')} UTC; load average (1 min) at the end: {os.getloadavg()[0]:.1f}; "
        f"command: python bench/bench_workers.py --deals {args.deals} --before-deals {args.before_deals}"
        f" --repeats {args.repeats}",
    ]
    text = "\n".join(lines)
    print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "bench_workers.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
