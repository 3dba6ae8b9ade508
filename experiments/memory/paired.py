"""Issue 24 lab: the stock memory's worth to `search`, paired against an identical copy on the same deals.

``search:memory=false`` and ``search:rollouts=32`` (the default `search` spelled out, an identical copy) each
played one seat against three `search` on the same 1,000 deals of seeds 5 and 6 (same deal seeds, same agent
streams). Per deal, the memoryless seat's difference minus the copy's removes what the candidate's seat and
streams lean by. Run from the repository root: ``python experiments/memory/paired.py``."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from recompute_gauntlet import mean_ci, per_deal  # noqa: E402

LABELS = {"nomem": "search:memory=false minus three search", "copy": "the identical copy minus three search",
          "paired": "search:memory=false minus the copy, paired"}
pooled: dict[str, list[float]] = {k: [] for k in LABELS}
for seed in (5, 6):
    a = per_deal(os.path.join(HERE, f"nomem_vs_search_seed{seed}"), "search:memory=false")["search"]
    b = per_deal(os.path.join(HERE, f"copy_vs_search_seed{seed}"), "search:rollouts=32")["search"]
    assert a.keys() == b.keys()
    rows = {"nomem": list(a.values()), "copy": list(b.values()), "paired": [a[d] - b[d] for d in a]}
    for name, values in rows.items():
        pooled[name] += values
        m, h, n = mean_ci(values)
        print(f"seed {seed}  {LABELS[name]:44s} {m:+.3f} +- {h:.3f} over {n} deals")
for name, values in pooled.items():
    m, h, n = mean_ci(values)
    print(f"both    {LABELS[name]:44s} {m:+.3f} +- {h:.3f} over {n} deals")
