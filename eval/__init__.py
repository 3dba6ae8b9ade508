"""Evaluation of Nertz agents: duplicate-deal tournaments, statistics, ratings, reports, ``nertz-eval``.

``run_tournament(agent_specs, num_players, deals, seed, rules, workers)`` plays a round robin or a gauntlet and
returns :class:`Results`; ``summarize(results)`` gives per-agent means with 95% intervals over deals (its ratings
need the ``eval`` extra); :mod:`nertz_env.eval.report` prints and saves them. See docs/guides/evaluation.md.
"""

from nertz_env.eval.stats import Estimate, mean_ci, paired_difference
from nertz_env.eval.summary import Summary, ladder_check, summarize
from nertz_env.eval.tournament import (
    GameRecord,
    Results,
    Tournament,
    plan_tournament,
    play_tournament,
    run_tournament,
)

__all__ = [
    "Estimate",
    "GameRecord",
    "Results",
    "Summary",
    "Tournament",
    "ladder_check",
    "mean_ci",
    "paired_difference",
    "plan_tournament",
    "play_tournament",
    "run_tournament",
    "summarize",
]
