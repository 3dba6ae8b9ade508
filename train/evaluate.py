"""Evaluation of a saved policy against the scripted baselines, through the tournament harness.

``evaluate_checkpoint(path, baselines, ...)`` plays, for each baseline, a duplicate-deal gauntlet of
:func:`nertz_env.eval.run_tournament`: the policy at one seat against ``num_players - 1`` copies of the
baseline, every seat rotation on every deal. It always takes an explicit checkpoint file and explicit
seeds (never "the newest file on disk"), plays the plain environment (no shaping) and returns one
:class:`EvalRow` per baseline: the policy's mean round score, the baseline seats' mean, and the paired
per-deal difference with its 95% interval. The trainer logs them to TensorBoard and to ``eval.csv``.
"""

from __future__ import annotations

import csv
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any


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
) -> list[EvalRow]:
    """Gauntlets of the policy in ``checkpoint`` against each baseline (see the module docstring)."""
    from nertz_env.eval import run_tournament, summarize

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
            )
        )
    return rows


def append_csv(path: str, rows: Sequence[EvalRow]) -> None:
    """Append rows to the CSV at ``path`` (writing the header when the file is new)."""
    if not rows:
        return
    new = not os.path.isfile(path)
    with open(path, "a", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(asdict(rows[0])))
        if new:
            writer.writeheader()
        for r in rows:
            writer.writerow(asdict(r))


def format_rows(rows: Sequence[EvalRow]) -> str:
    """A short text table of evaluation rows."""
    lines = []
    for r in rows:
        mark = "*" if r.significant else " "
        lines.append(
            f"  vs {r.baseline:<12} score {r.score:7.2f}  baseline {r.baseline_score:7.2f}  "
            f"diff {r.diff:+7.2f} [{r.diff_low:+.2f}, {r.diff_high:+.2f}]{mark} win {r.win:5.1%}  "
            f"nertz-out {r.nertz_out:5.1%}  ({r.deals} deals, {r.seconds:.1f} s)"
        )
    return "\n".join(lines)
