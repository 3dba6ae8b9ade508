"""Training throughput of each policy head with 1 and 2 torch threads and two minibatch sizes: short runs of
the real ``nertz-train`` command, alternating.

Run: ``python bench/bench_train.py [--heads flat,moves] [--batch-sizes 1024,4096] [--threads 1,2] [--rollouts 4]
[--pairs 3]``. Each run has the shape and PPO settings of the shipped ``selfplay_from_dagger`` config (vector
self-play, 4 players, 64 tables, 256x256, n_steps 64, 3 epochs) from random weights, with the given head
(``--policy``; the moves head with its default move_arch) and minibatch, no evaluation, no periodic checkpoint
and no TensorBoard, in a fresh process and a temporary run folder. The figures are the command's own report
(``throughput.json``): transitions/s, and the share of time in rollouts (the rest is PPO updates). Within each
pair every setting runs once, in an order that alternates, so they share the machine's load. Prints a table,
writes ``bench/out/bench_train.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import fmt, load_average, print_table, save

#: train/configs/selfplay_from_dagger.toml's options, less its starting policy, evaluation and checkpoints
SHAPE = [
    "--mode", "vector", "--num-players", "4", "--num-tables", "64", "--n-steps", "64",
    "--n-epochs", "3", "--net-arch", "256,256", "--learning-rate", "1e-4", "--lr-schedule", "constant",
    "--clip-range", "0.1", "--gamma", "0.995", "--gae-lambda", "0.95", "--ent-coef", "0.003",
    "--shaping", "--relative-reward", "--seed", "3",
]  # fmt: skip
ROLLOUT = 64 * 64 * 4  # n_steps x tables x learning seats (every seat learns): the transitions of one rollout


def run_once(command: str, setting: tuple[str, int, int], rollouts: int, run_dir: Path) -> dict:
    """One ``nertz-train`` run of ``(head, minibatch, threads)``; its ``throughput.json`` report."""
    head, batch, threads = setting
    cmd = [
        command,
        *SHAPE,
        "--policy", head,
        "--batch-size", str(batch),
        "--total-timesteps", str(rollouts * ROLLOUT),
        "--eval-every", "0",
        "--eval-deals", "0",
        "--checkpoint-every", "0",
        "--no-tensorboard",
        "--no-progress-bar",
        "--torch-threads", str(threads),
        "--run-dir", str(run_dir),
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"bench_train: {' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    report = json.loads((run_dir / "throughput.json").read_text())
    if report["torch_threads"] != threads:
        raise SystemExit(f"bench_train: asked for {threads} torch thread(s), the run reports {report['torch_threads']}")
    return report


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heads", default="flat,moves", help="policy heads to compare (default flat,moves)")
    ap.add_argument("--batch-sizes", default="1024,4096", help="minibatch sizes to compare (default 1024,4096)")
    ap.add_argument("--threads", default="1,2", help="torch thread counts to compare, comma-separated (default 1,2)")
    ap.add_argument("--rollouts", type=int, default=4, help=f"rollouts of {ROLLOUT:,} transitions per run (default 4)")
    ap.add_argument("--pairs", type=int, default=3, help="rounds of one run per setting (default 3)")
    args = ap.parse_args(argv)
    try:
        threads = [int(t) for t in args.threads.split(",")]
        batches = [int(b) for b in args.batch_sizes.split(",")]
    except ValueError:
        ap.error(f"--threads and --batch-sizes take integers like 1,2, got {args.threads!r} and {args.batch_sizes!r}")
    heads = args.heads.split(",")
    if not set(heads) <= {"flat", "moves"}:
        ap.error(f"--heads takes flat and moves, got {args.heads!r}")
    if not threads or min(threads + batches) < 1 or args.rollouts < 1 or args.pairs < 1:
        ap.error("--threads, --batch-sizes, --rollouts and --pairs must be positive")
    settings = [(h, b, t) for h in heads for b in batches for t in threads]
    command = shutil.which("nertz-train", path=os.path.dirname(sys.executable)) or shutil.which("nertz-train")
    if command is None:
        ap.error("no nertz-train command found (install the package with its train extra)")
    runs: dict[tuple[str, int, int], list[dict]] = {x: [] for x in settings}
    loads = []
    with tempfile.TemporaryDirectory(prefix="bench_train_") as tmp:
        for i in range(args.pairs):
            for x in settings if i % 2 == 0 else settings[::-1]:
                r = run_once(command, x, args.rollouts, Path(tmp) / f"run_{i}_{'_'.join(map(str, x))}")
                loads.append(load_average()[0])
                runs[x].append(r)
                print(
                    f"  pair {i + 1}, {x[0]} head, minibatch {x[1]}, {x[2]} thread(s): {fmt(r['steps_per_second'])} "
                    f"transitions/s, rollouts {r['rollout_share']:.0%} (load {loads[-1]:.1f})",
                    flush=True,
                )
    rows = []
    for x in settings:
        rates = [r["steps_per_second"] for r in runs[x]]
        base = statistics.median(r["steps_per_second"] for r in runs[(heads[0], x[1], threads[0])])
        share = statistics.median(r["rollout_share"] for r in runs[x])
        rows.append([x[0], fmt(x[1]), str(x[2]), fmt(statistics.median(rates)), ", ".join(fmt(v) for v in rates),
                     f"{statistics.median(rates) / base:.2f}x", f"{share:.0%}", f"{1 - share:.0%}"])
    table = print_table(
        f"nertz-train, selfplay_from_dagger's shape from random weights, {args.rollouts} rollouts of {ROLLOUT:,} "
        f"transitions (median of {args.pairs}; 1-min load {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores)",
        ["head", "minibatch", "torch threads", "transitions/s", "runs", f"vs {heads[0]}, {threads[0]} thread",
         "rollouts", "PPO updates"],
        rows,
    )
    payload = {"runs": {"/".join(map(str, x)): v for x, v in runs.items()}, "loadavg": loads, "table": table,
               "time": time.time()}
    save("bench_train", payload)
    return payload


if __name__ == "__main__":
    main()
