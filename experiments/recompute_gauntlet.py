"""Recompute a gauntlet's figures from its raw ``games.csv`` (what a table's figures must agree with).

Run: ``python experiments/recompute_gauntlet.py OUT_DIR CANDIDATE [--vs OTHER_OUT_DIR OTHER_CANDIDATE]``.

Per game: the candidate's score minus the mean score of the other seats; per deal and table (lineup): the mean
over the seat rotations; then the mean and the 95% Student-t interval over deals, per table (named by the
opponent). With ``--vs``, the two runs' per-deal figures (same deal seeds, e.g. two candidates' gauntlets on the
same ``--seed``) are paired per table opponent: the first minus the second, over the deals both played.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import math
import os
from collections import defaultdict

from scipy import stats


def _open(out_dir: str):  # type: ignore[no-untyped-def]
    for name in ("games.csv", "games.csv.gz"):
        path = os.path.join(out_dir, name)
        if os.path.isfile(path):
            return gzip.open(path, "rt") if name.endswith(".gz") else open(path)
    raise SystemExit(f"recompute_gauntlet: no games.csv in {out_dir}")


def per_deal(out_dir: str, candidate: str) -> dict[str, dict[int, float]]:
    """opponent -> deal seed -> the candidate minus the other seats, averaged over the rotations."""
    games: dict[tuple[str, str, str], list[tuple[str, float]]] = defaultdict(list)
    with _open(out_dir) as f:
        for row in csv.DictReader(f):
            games[(row["deal_seed"], row["lineup"], row["rotation"])].append((row["agent"], float(row["score"])))
    diffs: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (seed, _lineup, _rot), seats in games.items():
        mine = [s for a, s in seats if a == candidate]
        others = [(a, s) for a, s in seats if a != candidate]
        if len(mine) != 1 or not others:
            continue
        opponent = others[0][0]
        diffs[opponent][int(seed)].append(mine[0] - sum(s for _, s in others) / len(others))
    return {opp: {d: sum(v) / len(v) for d, v in per.items()} for opp, per in diffs.items()}


def mean_ci(values: list[float]) -> tuple[float, float, int]:
    n = len(values)
    m = sum(values) / n
    if n < 2:
        return m, float("nan"), n
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (n - 1))
    return m, float(stats.t.ppf(0.975, n - 1)) * sd / math.sqrt(n), n


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("candidate")
    ap.add_argument("--vs", nargs=2, metavar=("OUT_DIR", "CANDIDATE"))
    args = ap.parse_args(argv)
    first = per_deal(args.out_dir, args.candidate)
    for opp, per in sorted(first.items()):
        m, h, n = mean_ci(list(per.values()))
        print(f"{args.candidate} - three {opp}: {m:+.3f} ± {h:.3f} over {n} deals")
    if args.vs:
        second = per_deal(args.vs[0], args.vs[1])
        for opp in sorted(set(first) & set(second)):
            both = sorted(set(first[opp]) & set(second[opp]))
            m, h, n = mean_ci([first[opp][d] - second[opp][d] for d in both])
            print(f"({args.candidate} - three {opp}) - ({args.vs[1]} - three {opp}), paired by deal: "
                  f"{m:+.3f} ± {h:.3f} over {n} deals")


if __name__ == "__main__":
    main()
