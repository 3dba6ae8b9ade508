"""Evaluation of saved policies against the baselines, through the tournament harness: the trainer's
``eval.csv`` rows, and a finished run's learning curve (``python -m nertz_env.train.evaluate RUN_DIR``). See
docs/guides/training-sb3.md.
"""

from __future__ import annotations

import csv
import glob
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from nertz_env.agents import AgentSpecError, make_agent
from nertz_env.agents.meta import CheckpointError, meta_config, read_meta
from nertz_env.agents.policy import play_name
from nertz_env.agents.registry import IncompatibleAgentError, check_agent
from nertz_env.cli import Parser, at_least, refuse
from nertz_env.eval import run_tournament, summarize
from nertz_env.eval.stats import paired_difference
from nertz_env.threads import limit_threads


@dataclass
class EvalRow:
    """One baseline's result (scores are points per round)."""

    timesteps: int
    baseline: str
    deals: int
    games: int
    score: float  # the policy's mean round score
    score_ci95: float
    baseline_score: float  # the baseline seats' mean round score
    diff: float  # policy minus baseline seats, paired by deal
    diff_low: float
    diff_high: float
    win: float  # share of rounds the policy won
    nertz_out: float  # share of rounds the policy emptied its Nertz pile
    illegal: int
    seconds: float
    checkpoint: str
    play: str = "most probable"  # how the policy picked its actions: "most probable" (argmax) or "sampled"

    @property
    def significant(self) -> bool:
        """Is the 95% interval of the difference entirely above zero?"""
        return self.diff_low > 0.0


def evaluate_checkpoint(
    checkpoint: str,
    baselines: Sequence[str],
    num_players: int,
    rules: Mapping[str, Any] | None,
    deals: int,
    seed: int,
    deterministic: bool = True,
    workers: int = 1,
    timesteps: int = 0,
    per_deal: dict[str, dict[int, float]] | None = None,
) -> list[EvalRow]:
    """Gauntlets of the policy in ``checkpoint`` against each baseline: the policy at one seat, the
    baseline at the others, every seat rotation of every deal.
    ``per_deal``, when given, receives for each baseline ``{deal: policy minus baseline seats}``."""
    spec = f"{checkpoint}:deterministic={'true' if deterministic else 'false'}"
    rows = []
    for baseline in baselines:
        t0 = time.perf_counter()
        results = run_tournament(
            [spec, baseline],
            num_players=num_players,
            deals=deals,
            seed=seed,
            rules=dict(rules or {}),
            workers=workers,
            mode="gauntlet",
        )
        if results.interrupted:
            raise KeyboardInterrupt
        summary = summarize(results)
        me, them = summary.agents[0], summary.agents[1]
        diff = summary.differences[(me.label, them.label)]
        if per_deal is not None:
            mine, theirs = me.per_deal["score"], them.per_deal["score"]
            per_deal[baseline] = {d: mine[d] - theirs[d] for d in sorted(set(mine) & set(theirs))}
        rows.append(
            EvalRow(
                timesteps=int(timesteps),
                baseline=baseline,
                deals=me.deals,
                games=me.games,
                score=me.metrics["score"].mean,
                score_ci95=me.metrics["score"].half_width,
                baseline_score=them.metrics["score"].mean,
                diff=diff.mean,
                diff_low=diff.low,
                diff_high=diff.high,
                win=me.metrics["win"].mean,
                nertz_out=me.metrics["nertz_out"].mean,
                illegal=me.illegal,
                seconds=time.perf_counter() - t0,
                checkpoint=checkpoint,
                play=play_name(deterministic),
            )
        )
    return rows


def append_csv(path: str, rows: Sequence[EvalRow] | Sequence[dict[str, Any]]) -> None:
    """Append rows (evaluation rows or dicts with the same keys) to the CSV at ``path``, writing the header
    when the file is new."""
    if not rows:
        return
    dicts = [r if isinstance(r, dict) else asdict(r) for r in rows]
    new = not os.path.isfile(path)
    with open(path, "a", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(dicts[0]))
        if new:
            writer.writeheader()
        writer.writerows(dicts)


def format_rows(rows: Sequence[EvalRow]) -> str:
    """A short text table of evaluation rows; a ``*`` after an interval marks a policy better than that
    baseline with 95% confidence (said in a last line when a row has one)."""
    lines = [
        f"  vs {r.baseline:<12} score {r.score:7.2f}  baseline {r.baseline_score:7.2f}  "
        f"diff {r.diff:+7.2f} [{r.diff_low:+.2f}, {r.diff_high:+.2f}]{'*' if r.significant else ' '} "
        f"win {r.win:5.1%}  nertz-out {r.nertz_out:5.1%}  ({r.deals} deals, {r.play}, {r.seconds:.1f} s)"
        for r in rows
    ]
    if any(r.significant for r in rows):
        lines.append("  * the 95% interval of diff (policy minus baseline) lies above 0")
    return "\n".join(lines)


def checkpoint_eval_path(
    run_dir: str, deals: int, seed: int, per_deal: bool = False, deterministic: bool = True
) -> str:
    """Where :func:`evaluate_run` writes the rows for ``deals`` deals from ``seed`` (``per_deal``: the file
    of per-deal differences, ``timesteps,baseline,deal,diff``); sampled play has files of its own."""
    mode = "" if deterministic else "_stochastic"
    suffix = "_per_deal" if per_deal else ""
    return os.path.join(run_dir, f"checkpoint_eval_{deals}deals_seed{seed}{mode}{suffix}.csv")


def read_per_deal(path: str) -> dict[tuple[int, str], dict[int, float]]:
    """The per-deal file of :func:`evaluate_run`: ``(timesteps, baseline) -> {deal: diff}``."""
    out: dict[tuple[int, str], dict[int, float]] = {}
    if os.path.isfile(path):
        with open(path, newline="", encoding="utf-8") as f:
            for r in csv.DictReader(f):
                out.setdefault((int(r["timesteps"]), r["baseline"]), {})[int(r["deal"])] = float(r["diff"])
    return out


def paired_with_start(
    run_dir: str, deals: int, seed: int, deterministic: bool = True
) -> list[tuple[int, str, Any]]:
    """``(timesteps, baseline, estimate)`` of every evaluated checkpoint minus the first one evaluated (the
    start policy, step 0, when it was), paired over the same deals: what each checkpoint gained. Empty when
    the per-deal file is missing."""
    rows = read_per_deal(checkpoint_eval_path(run_dir, deals, seed, per_deal=True, deterministic=deterministic))
    out = []
    for baseline in sorted({b for _, b in rows}):
        steps = sorted(s for s, b in rows if b == baseline)
        first = rows[(steps[0], baseline)]
        out += [(s, baseline, paired_difference(rows[(s, baseline)], first)) for s in steps[1:]]
    return out


def run_checkpoints(run_dir: str, start: bool = True) -> list[tuple[int, str]]:
    """``(timesteps, path)`` of the run's checkpoints in step order; with ``start``, the run's ``init_from``
    policy first as step 0 when that file exists. ``FileNotFoundError`` for a run without checkpoints."""
    if not os.path.isdir(run_dir):
        raise FileNotFoundError(f"run directory not found: {run_dir}")
    found = sorted(glob.glob(os.path.join(run_dir, "checkpoints", "step_*.zip")))
    if not found:
        raise FileNotFoundError(f"{run_dir} has no checkpoints/step_*.zip (is it a nertz-train run directory?)")
    points = sorted((int(read_meta(p)["num_timesteps"]), p) for p in found)
    init_from = read_meta(points[-1][1]).get("train_config", {}).get("init_from")
    if start and init_from and os.path.isfile(init_from):
        points.insert(0, (0, init_from))
    return points


def evaluate_run(
    run_dir: str,
    baselines: Sequence[str],
    deals: int,
    seed: int,
    workers: int = 1,
    deterministic: bool = True,
    start: bool = True,
    log: Any = print,
) -> str:
    """Evaluate every checkpoint of ``run_dir`` against each baseline on the same deals; returns
    the CSV's path. Checkpoint and baseline pairs already in the CSV are skipped."""
    points = run_checkpoints(run_dir, start=start)
    meta = read_meta(points[-1][1])
    init_from = meta.get("train_config", {}).get("init_from")
    if start and init_from and points[0][0] != 0:
        log(f"the start policy {init_from} is not at hand (relative to {os.getcwd()}): not evaluated")
    out = checkpoint_eval_path(run_dir, deals, seed, deterministic=deterministic)
    deal_path = checkpoint_eval_path(run_dir, deals, seed, per_deal=True, deterministic=deterministic)
    done: set[tuple[int, str]] = set()
    if os.path.isfile(out):
        with open(out, newline="", encoding="utf-8") as f:
            done = {(int(r["timesteps"]), r["baseline"]) for r in csv.DictReader(f)}
    for steps, path in points:
        for baseline in baselines:
            if (steps, baseline) in done:
                continue
            per_deal: dict[str, dict[int, float]] = {}
            rows = evaluate_checkpoint(
                path,
                [baseline],
                int(meta["num_players"]),
                meta["rules"],
                deals,
                seed,
                deterministic=deterministic,
                workers=workers,
                timesteps=steps,
                per_deal=per_deal,
            )
            append_csv(
                deal_path,
                [{"timesteps": steps, "baseline": baseline, "deal": d, "diff": x} for d, x in per_deal[baseline].items()],
            )
            append_csv(out, rows)
            log(f"{steps:>12,d} {path}\n{format_rows(rows)}")
    return out


def main(argv: list[str] | None = None) -> int:
    limit_threads(1)  # this process and the tournament's worker processes (they inherit the cap)
    ap = Parser(
        prog="python -m nertz_env.train.evaluate",
        description="Evaluate every checkpoint of a training run on the same duplicate deals (a learning curve).",
    )
    ap.add_argument("run_dir", help="a nertz-train run folder (your own zips: nertz_env.eval.run_tournament)")
    ap.add_argument("--deals", type=at_least(1), default=200, help="duplicate deals per checkpoint (default 200)")
    ap.add_argument("--seed", type=at_least(0), default=5, help="seed of the deals (default 5)")
    ap.add_argument("--baseline", action="append", metavar="SPEC",
                    help="an agent spec to play each checkpoint against (repeat; default search)")
    ap.add_argument("--workers", type=at_least(1), default=1, help="processes (default 1)")
    ap.add_argument("--stochastic", action="store_true", help="sample actions instead of the most probable")
    ap.add_argument("--no-start", action="store_true", help="skip the run's init_from policy")
    args = ap.parse_args(argv)
    baselines = args.baseline or ["search"]
    if len(set(baselines)) < len(baselines):
        ap.error(f"--baseline names an agent twice: {' '.join(baselines)}")
    try:
        points = run_checkpoints(args.run_dir, start=False)
        meta = read_meta(points[-1][1])
        if args.no_start and not meta.get("train_config", {}).get("init_from"):
            ap.error(f"--no-start has no effect: {args.run_dir} was not started from an init_from policy")
        for b in baselines:  # a bad spec, or a trained baseline for another table, fails before any deal
            check_agent(make_agent(b), b, meta_config(meta))
        out = evaluate_run(
            args.run_dir,
            baselines,
            args.deals,
            args.seed,
            workers=args.workers,
            deterministic=not args.stochastic,
            start=not args.no_start,
        )
    except (FileNotFoundError, CheckpointError, AgentSpecError, IncompatibleAgentError) as e:
        return refuse(ap.prog, e)
    except KeyboardInterrupt:
        print(f"{ap.prog}: interrupted; the rows written so far are kept, run again to continue", file=sys.stderr)
        return 130
    gains = paired_with_start(args.run_dir, args.deals, args.seed, deterministic=not args.stochastic)
    if gains:
        print("minus the first point, paired over the same deals (95%):")
        for steps, baseline, gain in gains:
            print(f"  {steps:>12,d}  vs {baseline:<12} {gain.mean:+.2f} ± {gain.half_width:.2f}")
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
