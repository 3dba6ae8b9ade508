"""The learning curve of a distillation run (``python -m nertz_env.train.distill``): each round's network alone
against three copies of an opponent, beside how often it already made the teacher's choice.

Each round's network (``RUN/rounds/round_NN.zip``; round 0 is the start) plays ``nertz-eval gauntlet
RUN/rounds/round_NN.zip:deterministic=true OPPONENT --players 4 --deals N --seed S --out
RUN/eval/OPPONENT_SEED_DEALS/round_NN`` (default seed 101: a screening seed, never the bar's 11; an evaluation
already on disk for the same network file, deals and seed is read, not replayed). The figures are recomputed
from each run's ``games.csv`` (candidate minus the other seats per game, averaged over the seat rotations, 95%
Student-t interval over deals), printed as a table and written to ``RUN/eval/curve_OPPONENT_SEED_DEALS.json``.
The PNG draws every curve file of the run (one line per opponent) against the rounds' wall time, and the
network's agreement with the teacher on the next round's records, the states it drove to, before that round's
fit (``log.jsonl``).

Run: ``python experiments/distill_curve.py RUN [--opponent search] [--deals 300] [--seed 101] [--rounds 0,4,8]
[--out curve.png]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from recompute_gauntlet import mean_ci, per_deal


def evaluate(net: Path, opponent: str, out: Path, deals: int, seed: int, workers: int) -> dict:
    source = out / "source.json"
    key = {"net": str(net.resolve()), "mtime": net.stat().st_mtime, "opponent": opponent, "deals": deals,
           "seed": seed}
    spec = f"{net}:deterministic=true"
    if not (source.is_file() and json.loads(source.read_text()) == key):
        cmd = [sys.executable, "-m", "nertz_env.eval.cli", "gauntlet", spec, opponent, "--players", "4",
               "--deals", str(deals), "--seed", str(seed), "--workers", str(workers), "--out", str(out),
               "--no-progress", "--no-plots"]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        source.write_text(json.dumps(key))
    diffs = per_deal(str(out), spec)[opponent]
    m, h, n = mean_ci(list(diffs.values()))
    return {"mean": m, "ci95": h, "deals": n, "per_deal": {str(k): v for k, v in diffs.items()}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("run", type=Path, help="the run directory (holding rounds/ and log.jsonl)")
    ap.add_argument("--opponent", default="search", help="the three opponents' spec (default search)")
    ap.add_argument("--deals", type=int, default=300)
    ap.add_argument("--seed", type=int, default=101)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--rounds", default=None, help="rounds to evaluate, e.g. 0,4,8 (default: every saved round)")
    ap.add_argument("--out", type=Path, default=None, help="the PNG to write (default RUN/eval/curve.png)")
    args = ap.parse_args(argv)
    log_path = args.run / "log.jsonl"
    if not log_path.is_file():
        ap.error(f"no {log_path}: give the directory of a distillation run")
    if args.deals < 1:
        ap.error(f"--deals must be at least 1, got {args.deals}")
    log = [json.loads(line) for line in log_path.read_text().splitlines() if line.strip()]
    minutes = {0: 0.0, **{r["round"]: r["elapsed_s"] / 60 for r in log}}
    # network k's agreement with the teacher is measured on round k+1's records (the states it drove to), before
    # that round's fit
    agreement = {r["round"] - 1: r["agreement_before_fit"] for r in log}
    saved = sorted(int(p.stem.split("_")[1]) for p in (args.run / "rounds").glob("round_*.zip"))
    wanted = saved if args.rounds is None else [int(x) for x in args.rounds.split(",")]
    missing = sorted(set(wanted) - set(saved))
    if missing:
        ap.error(f"rounds {missing} are not saved in {args.run / 'rounds'} (saved: {saved})")
    tag = f"{args.opponent.replace(':', '_').replace('/', '_')}_{args.seed}_{args.deals}"
    curve_path = args.run / "eval" / f"curve_{tag}.json"
    rows = json.loads(curve_path.read_text()) if curve_path.is_file() else []
    done = {r["round"]: r for r in rows}
    for k in wanted:
        net = args.run / "rounds" / f"round_{k:02d}.zip"
        d = evaluate(net, args.opponent, args.run / "eval" / tag / f"round_{k:02d}", args.deals, args.seed,
                     args.workers)
        done[k] = {"round": k, "minutes": minutes.get(k), "mean": d["mean"], "ci95": d["ci95"], "deals": d["deals"],
                   "per_deal": d["per_deal"]}
        base = done.get(0)
        gain = ""
        if base is not None and k != 0:
            both = sorted(set(base["per_deal"]) & set(done[k]["per_deal"]))
            gm, gh, _ = mean_ci([done[k]["per_deal"][s] - base["per_deal"][s] for s in both])
            done[k]["minus_round_0"] = [gm, gh]
            gain = f", minus round 0 paired by deal {gm:+.3f} ± {gh:.3f}"
        print(f"round {k}: {d['mean']:+.3f} ± {d['ci95']:.3f} against three {args.opponent}{gain}", flush=True)
    rows = [done[k] for k in sorted(done)]
    curve_path.parent.mkdir(parents=True, exist_ok=True)
    curve_path.write_text(json.dumps(rows, indent=1))
    print(f"\n| round | minutes of training | the network's agreement with the teacher (next round's records) | "
          f"network minus three "
          f"{args.opponent} (95%) | minus round 0, paired | deals (seed {args.seed}) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        agree = agreement.get(r["round"])
        paired = r.get("minus_round_0")
        print(f"| {r['round']} | {r['minutes'] or 0:.1f} | {'' if agree is None else f'{agree:.2%}'} | "
              f"{r['mean']:+.2f} ± {r['ci95']:.2f} | {'' if paired is None else f'{paired[0]:+.2f} ± {paired[1]:.2f}'}"
              f" | {r['deals']} |")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for path in sorted((args.run / "eval").glob("curve_*.json")):
        pts = json.loads(path.read_text())
        opp, seed, deals = path.stem[len("curve_"):].rsplit("_", 2)
        ax.errorbar([p["minutes"] or 0 for p in pts], [p["mean"] for p in pts], yerr=[p["ci95"] for p in pts],
                    fmt="o-", capsize=3, label=f"vs 3x {opp} ({deals} deals, seed {seed})")
    ax.axhline(0, color="grey", lw=1)
    ax.set_xlabel("distillation wall time (minutes; round 0 is the starting network)")
    ax.set_ylabel("network minus the other seats\n(points per round)")
    ax.legend(fontsize=8)
    ax2.plot([minutes[r] for r in sorted(agreement)], [100 * agreement[r] for r in sorted(agreement)], "s-")
    ax2.set_xlabel("wall time at the end of the round that made the network (minutes)")
    ax2.set_ylabel("% of the next round's records where the network\nchose the teacher's move")
    fig.tight_layout()
    out = args.out or args.run / "eval" / "curve.png"
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
