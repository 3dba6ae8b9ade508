"""Lab (issue 34): a gauntlet's paired difference recomputed from its raw games.csv, not from nertz-eval's tables.

Per deal: the candidate's mean score over its games minus the baseline seats' mean score in the same games;
then the mean over deals with a normal 95% interval (1.96 standard errors).

Usage: python recompute.py RESULTS_DIR/games.csv[.gz] CANDIDATE (the records here are gzipped)
"""
import csv
import gzip
import math
import sys
from collections import defaultdict

path, cand = sys.argv[1], sys.argv[2]
mine, theirs = defaultdict(list), defaultdict(list)
with (gzip.open if path.endswith(".gz") else open)(path, "rt", newline="") as f:
    for r in csv.DictReader(f):
        (mine if r["agent"] == cand else theirs)[int(r["deal"])].append(float(r["score"]))
diffs = [sum(mine[d]) / len(mine[d]) - sum(theirs[d]) / len(theirs[d]) for d in sorted(mine)]
n = len(diffs)
mean = sum(diffs) / n
sd = math.sqrt(sum((x - mean) ** 2 for x in diffs) / (n - 1))
print(f"{cand} minus the others, recomputed from {path}: {mean:+.2f} ± {1.96 * sd / math.sqrt(n):.2f} over {n} deals")
