"""Lab (issue 40 probe): the results table (results.md) from probe.jsonl and each clone's differences.csv.

    python table.py        # writes results.md beside it
"""
import csv
import json
from pathlib import Path

HERE = Path(__file__).parent
rows = {}
for line in (HERE / "probe.jsonl").read_text().splitlines():
    r = json.loads(line)
    rows[(r["n"], r["head"], r["memory"])] = r  # a repeated fit: the last line counts
sizes = sorted({n for n, _, _ in rows})
cols = [("flat", False), ("flat", True), ("moves", False), ("moves", True)]


def name(n, head, mem):
    return f"{head}_{'mem' if mem else 'nomem'}_{n}"


def diff(n, head, mem):
    with open(HERE / "scores" / name(n, head, mem) / "differences.csv") as f:
        d = next(csv.DictReader(f))
    return f"{float(d['mean']):+.2f} ± {float(d['ci95']):.2f}"


head = "| states | " + " | ".join(f"{h}, memory {'on' if m else 'off'}" for h, m in cols) + " |"
rule = "|---:|" + "---:|" * len(cols)
held = rows[(sizes[0], "flat", False)]["heldout_states"]
out = [
    f"Held-out agreement with `search` ({held:,} decisions of other deals), by training states:",
    "",
    head,
    rule,
    *(f"| {n:,} | " + " | ".join(f"{100 * rows[(n, h, m)]['heldout_agreement']:.1f}%" for h, m in cols) + " |"
      for n in sizes),
    "",
    "Each clone against three `heuristic` seats (score per round minus theirs, mean ± 95% over 1,000 duplicate "
    "deals, seats rotated, seed 4040):",
    "",
    head,
    rule,
    *(f"| {n:,} | " + " | ".join(diff(n, h, m) for h, m in cols) + " |" for n in sizes),
    "",
    "Actor weights: flat "
    + f"{rows[(sizes[0], 'flat', False)]['actor_weights']:,} (memory off) / {rows[(sizes[0], 'flat', True)]['actor_weights']:,} (on); "
    + f"moves {rows[(sizes[0], 'moves', False)]['actor_weights']:,} / {rows[(sizes[0], 'moves', True)]['actor_weights']:,}. "
    + f"Fitting all {len(rows)} clones took {sum(r['fit_s'] for r in rows.values()) / 60:.0f} min of one core.",
]
(HERE / "results.md").write_text("\n".join(out) + "\n")
print("\n".join(out))
