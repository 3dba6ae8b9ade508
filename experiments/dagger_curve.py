"""The learning curve of a DAgger imitation run: each round's checkpoint against three ``search`` players.

``python -m nertz_env.train.imitate ... --checkpoint-dir RUN/rounds`` saves the policy after the first fit and
after every DAgger round; each was evaluated with ``nertz-eval gauntlet RUN/rounds/round_NN.zip:deterministic=true
search --players 4 --deals 200 --seed 5 --out RUN/eval/round_NN`` (seed 5, not the bar's seed 7). This script
reads those evaluations and the checkpoints' times and draws score difference against training wall time.

Run: ``python experiments/dagger_curve.py RUN --out curve.png [--start UNIX_TIME]`` (default start: the first
checkpoint's time minus ``--first-fit-seconds``). Prints the table it plots.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def rows(run: Path) -> list[dict]:
    out = []
    for ev in sorted((run / "eval").glob("round_*/results.json")):
        name = ev.parent.name
        ckpt = run / "rounds" / f"{name}.zip"
        diff = json.loads(ev.read_text())["summary"]["score_differences"][0]
        out.append({"round": int(name.split("_")[1]), "mtime": ckpt.stat().st_mtime, "mean": diff["mean"],
                    "ci95": diff["ci95"], "deals": diff["n"], "a": diff["a"], "b": diff["b"]})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--start", type=float, default=None, help="the run's start (unix time)")
    ap.add_argument("--first-fit-seconds", type=float, default=0.0)
    args = ap.parse_args(argv)
    data = rows(args.run)
    if not data:
        raise SystemExit(f"no evaluations under {args.run / 'eval'}")
    start = args.start if args.start is not None else data[0]["mtime"] - args.first_fit_seconds
    print("| round | minutes of training | policy minus search (95%) | deals |")
    print("|---:|---:|---:|---:|")
    for r in data:
        r["minutes"] = (r["mtime"] - start) / 60
        print(f"| {r['round']} | {r['minutes']:.1f} | {r['mean']:+.2f} ± {r['ci95']:.2f} | {r['deals']} |")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.errorbar([r["minutes"] for r in data], [r["mean"] for r in data], yerr=[r["ci95"] for r in data],
                fmt="o-", capsize=3, label="DAgger checkpoint vs 3x search (200 deals, seed 5)")
    ax.axhline(0, color="grey", lw=1)
    ax.axhline(3, color="red", ls="--", lw=1, label="bar: +3")
    ax.set_xlabel("training wall time (minutes)")
    ax.set_ylabel("points per round minus the search seats")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
