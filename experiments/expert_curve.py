"""The learning curve of an expert-iteration run: the planner holding each iteration's network against three
``search`` players, against the run's training wall time.

``python -m nertz_env.train.expert --checkpoint-dir RUN/iters ...`` saves each iteration's network
(``iter_NN.zip``) and a ``log.jsonl`` line with its wall time. This script evaluates the planner with each
of them, and with the initial network (iteration 0), by ``nertz-eval gauntlet "expert:policy=NET" search
--players 4 --deals N --seed S --out RUN/eval/iter_NN`` (default seed 101, never the bar's seed 7; an
evaluation already on disk for the same deals and seed is read, not replayed), then prints the table and
draws the PNG.

Run: ``python experiments/expert_curve.py RUN --out curve.png [--deals 300] [--seed 101] [--init ppo]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path


def evaluate(net: str, out: Path, deals: int, seed: int, workers: int) -> dict:
    res, source = out / "results.json", out / "source.json"
    # a gauntlet already played is reused only for the very same network file, deals and seed
    key = {"net": str(Path(net).resolve()), "mtime": Path(net).stat().st_mtime if Path(net).is_file() else None,
           "deals": deals, "seed": seed}
    if res.is_file() and source.is_file() and json.loads(source.read_text()) == key:
        return json.loads(res.read_text())["summary"]["score_differences"][0]
    cmd = [sys.executable, "-m", "nertz_env.eval.cli", "gauntlet", f"expert:policy={net}", "search",
           "--players", "4", "--deals", str(deals), "--seed", str(seed), "--workers", str(workers),
           "--out", str(out), "--no-progress", "--no-plots"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    source.write_text(json.dumps(key))
    return json.loads(res.read_text())["summary"]["score_differences"][0]


def _pm(ci95: float | None) -> str:
    """``± half-width``, or a note when one deal gives no interval (the harness reports None then)."""
    return "(one deal: no interval)" if ci95 is None else f"± {ci95:.2f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("run", type=Path, help="the run directory (holding iters/)")
    ap.add_argument("--out", type=Path, required=True, help="the PNG to write")
    ap.add_argument("--deals", type=int, default=300)
    ap.add_argument("--seed", type=int, default=101)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--init", default=None, help="the run's initial network (default: from log.jsonl)")
    args = ap.parse_args(argv)
    log = args.run / "iters" / "log.jsonl"
    if not log.is_file():
        ap.error(f"no {log}: give the run directory whose iters/ the training wrote")
    if args.deals < 1:
        ap.error(f"--deals must be at least 1, got {args.deals}")
    iters = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    init = args.init or iters[0]["teacher"].split("policy=", 1)[1].split(",", 1)[0]
    points = [(0, 0.0, init)] + [(r["iteration"], r["elapsed_s"] / 60, r["policy"]) for r in iters]
    rows = []
    for k, minutes, net in points:
        d = evaluate(net, args.run / "eval" / f"iter_{k:02d}", args.deals, args.seed, args.workers)
        rows.append({"iteration": k, "minutes": minutes, "mean": d["mean"], "ci95": d["ci95"], "deals": d["n"]})
        print(f"iteration {k}: {d['mean']:+.2f} {_pm(d['ci95'])}", flush=True)
    print(f"\n| iteration | minutes of training | planner minus search (95%) | deals (seed {args.seed}) |")
    print("|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['iteration']} | {r['minutes']:.1f} | {r['mean']:+.2f} {_pm(r['ci95'])} | {r['deals']} |")
    (args.run / "eval" / "curve.json").write_text(json.dumps(rows, indent=2))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.errorbar([r["minutes"] for r in rows], [r["mean"] for r in rows], yerr=[r["ci95"] or 0.0 for r in rows],
                fmt="o-", capsize=3, label=f"expert planner vs 3x search ({args.deals} deals, seed {args.seed})")
    ax.axhline(0, color="grey", lw=1)
    ax.set_xlabel("expert-iteration wall time (minutes; iteration 0 is the initial network)")
    ax.set_ylabel("points per round minus the search seats")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
