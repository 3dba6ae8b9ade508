"""Paired summary of tempo.py's records: for each count, ppo's mean per round, the control's (an identical
copy of `search` in the same seat on the same deals), and ppo minus the control with a 95% interval over deals
(the four seats of a deal averaged first, as nertz-eval pairs its duplicate deals).

Usage: python paired.py ppo.jsonl.gz search_rollouts_32.jsonl.gz   (prints a Markdown table; the second file
is the one subtracted; with --by-undo, the first file's rounds split by whether the second file's player undid
a move in the same round, (deal, seat))"""
import gzip
import json
import sys

import numpy as np


def load(path: str) -> dict[tuple[int, int], dict]:
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        return {(r["deal"], r["seat"]): r for r in map(json.loads, f)}


a, b = load(sys.argv[1]), load(sys.argv[2])
if "--by-undo" in sys.argv:
    ks = sorted(set(a) & set(b))
    u = np.array([b[k]["undo"] for k in ks])
    print(f"| rounds (deal, seat) where {sys.argv[2]}'s player | rounds | unchanged | own score | the others' mean | "
          "margin, first minus second (95%, over rounds) |")
    print("|---|---:|---:|---:|---:|---:|")
    for sel, name in ((u == 0, "never undid a move"), (u > 0, "undid a move")):
        dm = np.array([(a[k]["score"] - a[k]["others"]) - (b[k]["score"] - b[k]["others"]) for k in ks])[sel]
        own = np.array([a[k]["score"] - b[k]["score"] for k in ks])[sel]
        oth = np.array([a[k]["others"] - b[k]["others"] for k in ks])[sel]
        same = np.array([all(a[k][f] == b[k][f] for f in ("score", "ticks", "others")) for k in ks])[sel]
        print(f"| {name} | {sel.sum()} | {same.mean():.0%} | {own.mean():+.2f} | {oth.mean():+.2f} | "
              f"{dm.mean():+.2f} ± {1.96 * dm.std(ddof=1) / np.sqrt(len(dm)):.2f} |")
    sys.exit(0)
keys = sorted(set(a) & set(b))
deals = sorted({d for d, _ in keys})
full = [d for d in deals if all((d, s) in a and (d, s) in b for s in range(4))]
for r in (a, b):
    for k in keys:
        x = r[k]
        x["margin"] = x["score"] - x["others"]
        x["useful"] = x["lake"] + x["to_work"] + x["run"]
        x["lake_share"] = x["lake"] / x["ticks"]
fields = ["margin", "score", "score_lake", "nertz_left", "ticks", "lake", "lake_nertz", "to_work", "to_work_nertz",
          "run", "flip", "turn_over", "wait", "lake_missed", "nertz_missed", "undo", "lost_race", "illegal"]
na, nb = (p.split("/")[-1].split(".")[0] for p in sys.argv[1:3])
print(f"{len(full)} deals x 4 seats\n")
print(f"| per round | {na} | {nb} | {na} minus {nb} (95%, over deals) |")
print("|---|---:|---:|---:|")
for f in fields:
    pa = np.array([np.mean([a[(d, s)][f] for s in range(4)]) for d in full])
    pb = np.array([np.mean([b[(d, s)][f] for s in range(4)]) for d in full])
    diff = pa - pb
    h = 1.96 * diff.std(ddof=1) / np.sqrt(len(diff))
    print(f"| {f} | {pa.mean():.2f} | {pb.mean():.2f} | {diff.mean():+.2f} ± {h:.2f} |")
