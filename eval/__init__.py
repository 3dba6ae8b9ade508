"""Evaluation of Nertz agents: duplicate-deal tournaments, statistics, ratings, reports, ``nertz-eval``.

``run_tournament(agent_specs, num_players, deals, seed, rules, workers)`` plays a round robin or a gauntlet and
returns :class:`Results`; ``summarize(results)`` gives per-agent means with 95% intervals over deals. Names are
imported on first use, so ``nertz-demo`` can say in one line that the ``eval`` extra is missing. See
docs/guides/evaluation.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nertz_env.eval.stats import Estimate, mean_ci, paired_difference, t_quantile
    from nertz_env.eval.summary import Summary, ladder_check, summarize
    from nertz_env.eval.tournament import (
        GameRecord,
        Results,
        Tournament,
        plan_tournament,
        play_tournament,
        run_tournament,
    )

_LAZY = {
    "Estimate": "nertz_env.eval.stats",
    "mean_ci": "nertz_env.eval.stats",
    "paired_difference": "nertz_env.eval.stats",
    "t_quantile": "nertz_env.eval.stats",
    "Summary": "nertz_env.eval.summary",
    "ladder_check": "nertz_env.eval.summary",
    "summarize": "nertz_env.eval.summary",
    "GameRecord": "nertz_env.eval.tournament",
    "Results": "nertz_env.eval.tournament",
    "Tournament": "nertz_env.eval.tournament",
    "plan_tournament": "nertz_env.eval.tournament",
    "play_tournament": "nertz_env.eval.tournament",
    "run_tournament": "nertz_env.eval.tournament",
}

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
    "t_quantile",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'nertz_env.eval' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
