"""Lab (issue 40): the runs from scratch of both heads, three seeds each, in one table and one plot.

  python seeds.py collect RUN_DIR ...   copy each run's eval.csv, with the wall time at which each evaluation
                                        ended (seconds since training started, from its TensorBoard events),
                                        and throughput.json into records/<run folder name>/
  python seeds.py report NAME ...       from records/NAME/: results/seeds.md (the table) and the
                                        learning page's plot, docs/_static/learning_seeds.png

Names are scratch_<head>_s<seed> (queue.sh's run folders). "Cleared" is the first evaluation whose 95% interval
of the score minus three `heuristic` seats is above zero (1,000 deals of the evaluation seed 20240601).
"""

import csv
import glob
import json
import os
import shutil
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
RECORDS = os.path.join(HERE, "records")


def collect(run: str) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out = os.path.join(RECORDS, os.path.basename(run.rstrip("/")))
    os.makedirs(out, exist_ok=True)
    wall: dict[int, float] = {}
    for path in sorted(glob.glob(f"{run}/tb/*/events.out.tfevents.*")):  # one file per start or resume
        events = EventAccumulator(path)
        events.Reload()
        start, before = events.FirstEventTimestamp(), max(wall.values(), default=0.0)
        for e in events.Scalars("eval/heuristic/score_diff"):
            wall[e.step] = before + e.wall_time - start
    with open(f"{run}/eval.csv") as f:
        rows = list(csv.DictReader(f))
    with open(f"{out}/eval.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, [*rows[0], "wall_seconds"])
        writer.writeheader()
        for r in rows:
            writer.writerow({**r, "wall_seconds": round(wall[int(r["timesteps"])], 1)})
    shutil.copy(f"{run}/throughput.json", out)


def report(names: list[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lines = [
        "| head | seed | cleared at (transitions) | wall time to it | end: minus 3 `heuristic` [95%] | "
        "wall time, whole run | transitions/s while training |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    by_head: dict[str, list[list[dict]]] = defaultdict(list)
    for name in names:
        head, seed = name.split("_")[1], name.rsplit("_s", 1)[1]
        with open(f"{RECORDS}/{name}/eval.csv") as f:
            rows = [r for r in csv.DictReader(f) if r["baseline"] == "heuristic"]
        with open(f"{RECORDS}/{name}/throughput.json") as f:
            speed = json.load(f)
        by_head[head].append(rows)
        first = next((r for r in rows if float(r["diff_low"]) > 0), None)
        end = rows[-1]
        cleared = (
            (f"{int(first['timesteps']):,}", f"{float(first['wall_seconds']) / 60:.0f} min")
            if first
            else (f"not by {int(end['timesteps']):,}", "-")
        )
        lines.append(
            f"| {head} | {seed} | {cleared[0]} | {cleared[1]} | {float(end['diff']):+.2f} "
            f"[{float(end['diff_low']):+.2f}, {float(end['diff_high']):+.2f}] | "
            f"{speed['wall_seconds'] / 60:.0f} min | {speed['steps_per_second']:,.0f} |"
        )
    os.makedirs(f"{HERE}/results", exist_ok=True)
    with open(f"{HERE}/results/seeds.md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for (head, runs), color in zip(sorted(by_head.items()), ("tab:orange", "tab:blue"), strict=False):
        for i, rows in enumerate(runs):
            x = [int(r["timesteps"]) / 1e6 for r in rows]
            ax.plot(x, [float(r["diff"]) for r in rows], "o-", color=color, ms=3, lw=1,
                    label=f"{head} head ({len(runs)} seed{'s' * (len(runs) > 1)})" if i == 0 else None)
            ax.fill_between(x, [float(r["diff_low"]) for r in rows], [float(r["diff_high"]) for r in rows],
                            color=color, alpha=0.12)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xlabel("transitions (millions)")
    ax.set_ylabel("score minus 3 heuristic seats\n(per round, 95% interval, 1,000 deals)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(f"{HERE}/../../docs/_static/learning_seeds.png", dpi=110)


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("collect", "report"):
        sys.exit(__doc__)
    if sys.argv[1] == "collect":
        for run in sys.argv[2:]:
            collect(run)
    else:
        report(sys.argv[2:])
