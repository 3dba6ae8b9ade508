"""Lab (issue 34): learning curves of several nertz-train runs in one PNG.

Top: the policy's score minus the three `heuristic` seats' (eval.csv, most probable action, with its 95%
interval); bottom: the policy's entropy in nats (SB3's -entropy_loss, from the run's --verbose 1 log).

Usage: python curves.py OUT.png LABEL=RUN_DIR[:LOG] ...     (LOG defaults to RUN_DIR.log)
"""
import csv
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

out, runs = sys.argv[1], sys.argv[2:]
fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
for spec in runs:
    label, path = spec.rsplit("=", 1)
    run, log = [*path.split(":", 1), path.rstrip("/") + ".log"][:2]
    with open(f"{run}/eval.csv") as f:
        rows = [r for r in csv.DictReader(f) if r["baseline"] == "heuristic"]
    x = [int(r["timesteps"]) / 1e6 for r in rows]
    line, = top.plot(x, [float(r["diff"]) for r in rows], "o-", label=label)
    top.fill_between(x, [float(r["diff_low"]) for r in rows], [float(r["diff_high"]) for r in rows],
                     color=line.get_color(), alpha=0.15)
    steps, ent = [], []
    with open(log) as f:
        blocks = f.read().split("-----\n")
    for block in blocks:
        t = re.search(r"total_timesteps\s*\|\s*(\d+)", block)
        e = re.search(r"entropy_loss\s*\|\s*(-?[\d.e+-]+)", block)
        if t and e:
            steps.append(int(t.group(1)) / 1e6)
            ent.append(-float(e.group(1)))
    bottom.plot(steps, ent, color=line.get_color(), label=label)
top.axhline(0, color="grey", lw=0.8)
top.set_ylabel("score minus 3 heuristic seats\n(per round, 95% interval)")
bottom.set_ylabel("policy entropy (nats)")
bottom.set_xlabel("learner transitions (millions)")
top.legend(fontsize=8)
fig.tight_layout()
fig.savefig(out, dpi=110)
print(f"wrote {out}")
