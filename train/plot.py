"""The learning curve of a run: ``python -m nertz_env.train.plot RUN_DIR [--out curve.png]``.

Draws what RUN_DIR holds: a ``nertz-train`` run's eval.csv and checkpoint evaluations, and the training rounds'
mean score from any TensorBoard log under it (SB3's ``rollout/ep_rew_mean``, which ``VecMonitor`` records: so
your own SB3 run's ``tensorboard_log`` folder too). Needs matplotlib. See docs/guides/training-sb3.md.
"""

from __future__ import annotations

import csv
import glob
import os
import re
from collections import defaultdict

from nertz_env.cli import Parser, refuse
from nertz_env.extras import install_command

_CHECKPOINT_EVAL = re.compile(r"checkpoint_eval_(\d+)deals_seed(-?\d+)(_stochastic)?\.csv$")


def read_eval(run_dir: str, name: str = "eval.csv") -> dict[str, list[dict[str, float]]]:
    """The rows of ``run_dir/name`` (``eval.csv`` or a checkpoint evaluation) grouped by baseline, in
    timestep order."""
    rows: dict[str, list[dict[str, float]]] = defaultdict(list)
    with open(os.path.join(run_dir, name), newline="", encoding="utf-8") as f:
        for r in sorted(csv.DictReader(f), key=lambda r: float(r["timesteps"])):
            rows[r["baseline"]].append(
                {
                    k: float(r[k])
                    for k in ("timesteps", "deals", "diff", "diff_low", "diff_high", "score", "baseline_score")
                }
            )
    return dict(rows)


def checkpoint_evals(run_dir: str) -> list[tuple[str, str]]:
    """``(file name, legend text)`` of the run's ``checkpoint_eval_<deals>deals_seed<seed>.csv`` files."""
    names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(run_dir, "checkpoint_eval_*.csv")))
    found = [m for m in map(_CHECKPOINT_EVAL.search, names) if m]
    return [(m.string, f"checkpoints, {m[1]} deals, seed {m[2]}{', sampled play' if m[3] else ''}")
            for m in found]


def read_training_scores(run_dir: str) -> list[tuple[int, float]]:
    """``rollout/ep_rew_mean`` from the TensorBoard logs anywhere under ``run_dir`` (empty without tensorboard or
    logs)."""
    try:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    except ImportError:
        return []
    points: list[tuple[int, float]] = []
    logs = glob.glob(os.path.join(glob.escape(run_dir), "**", "events.out.tfevents.*"), recursive=True)
    for d in sorted({os.path.dirname(p) for p in logs}):
        acc = EventAccumulator(d).Reload()
        if "rollout/ep_rew_mean" in acc.Tags().get("scalars", []):
            points += [(e.step, e.value) for e in acc.Scalars("rollout/ep_rew_mean")]
    return sorted(points)


def plot(run_dir: str, out: str, title: str | None = None) -> str:
    """Draw the curve of ``run_dir`` to ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = [(read_eval(run_dir, name), f" ({text})", "s-") for name, text in checkpoint_evals(run_dir)]
    if os.path.isfile(os.path.join(run_dir, "eval.csv")):
        evals = read_eval(run_dir)
        sizes = sorted({int(r["deals"]) for rows in evals.values() for r in rows})
        text = f" (training-time, {'/'.join(map(str, sizes))} deals)" if series and sizes else ""
        series.insert(0, (evals, text, "o-"))
    train = read_training_scores(run_dir)
    if not series and not train:
        raise FileNotFoundError(f"{run_dir} holds no eval.csv, checkpoint_eval_*.csv or TensorBoard log of "
                                "rollout/ep_rew_mean (SB3 logs it with tensorboard_log= on a VecMonitor)")
    fig, axes = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    ax = axes[0]
    for evals, text, style in series:
        for baseline, rows in evals.items():
            x = [r["timesteps"] / 1e6 for r in rows]
            ax.plot(x, [r["diff"] for r in rows], style, label=f"vs 3x {baseline}{text}")
            ax.fill_between(x, [r["diff_low"] for r in rows], [r["diff_high"] for r in rows], alpha=0.2)
    ax.axhline(0.0, color="grey", lw=1, label="as strong as the baseline")
    ax.set_ylabel("policy - baseline seats\n(points per round, 95% CI)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    ax.set_title(title or f"learning curve: {run_dir}")
    ax = axes[1]
    if train:
        xs, ys = [s / 1e6 for s, _ in train], [v for _, v in train]
        ax.plot(xs, ys, lw=0.5, alpha=0.35, label="per rollout")
        k = max(1, len(ys) // 40)  # a running mean over about 1/40 of the run
        if k > 1:
            run = [sum(ys[max(0, i - k + 1) : i + 1]) / (i + 1 - max(0, i - k + 1)) for i in range(len(ys))]
            ax.plot(xs, run, lw=1.5, color="C0", label=f"running mean of {k}")
            ax.legend(fontsize=8)
    ax.set_ylabel("training rounds:\nmean score (unshaped)")
    ax.set_xlabel("learner transitions (millions)")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = Parser(prog="python -m nertz_env.train.plot", description=__doc__)
    ap.add_argument("run_dir", help="a nertz-train run folder, or your own SB3 run's tensorboard_log folder")
    ap.add_argument("--out", help="image path, .png, .svg or .pdf (default RUN_DIR/learning_curve.png)")
    ap.add_argument("--title")
    args = ap.parse_args(argv)
    out = args.out or os.path.join(args.run_dir, "learning_curve.png")
    if os.path.splitext(out)[1].lower() not in (".png", ".svg", ".pdf"):
        ap.error(f"--out must end in .png, .svg or .pdf, got {out!r}")
    if not os.path.isdir(args.run_dir):
        return refuse(ap.prog, f"run directory not found: {args.run_dir}")
    try:
        print(plot(args.run_dir, out, args.title))
    except ImportError:  # plot's first line imports matplotlib
        return refuse(ap.prog, f"drawing needs matplotlib: {install_command('eval')}")
    except FileNotFoundError as e:
        return refuse(ap.prog, e)
    except (KeyError, ValueError) as e:
        return refuse(ap.prog, f"{args.run_dir}: an evaluation file is not one that nertz-train wrote "
                               f"({e!r})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
