"""Python-side entry points to the compiled drivers: pick the serial or the parallel build by batch size.

The drivers themselves are in :mod:`nertz_env.engine.rules` (see the note there on numba's cache).
"""

from __future__ import annotations

import numpy as np

from nertz_env.engine.rules import (
    reset_continue_serial,
    reset_seeded_parallel,
    reset_seeded_serial,
    sample_parallel,
    sample_serial,
    step_parallel,
    step_serial,
)
from nertz_env.engine.state import TableState

PARALLEL_MIN_TABLES = 64

__all__ = [
    "reset",
    "reset_continue_serial",
    "reset_seeded_serial",
    "sample",
    "step",
    "step_serial",
    "use_parallel",
]


def use_parallel(num_tables: int) -> bool:
    """Whether the parallel build pays off (thread start-up costs more than a few tables' work)."""
    return num_tables >= PARALLEL_MIN_TABLES


def reset(state: TableState, seeds: np.ndarray) -> None:
    """Seed and deal every table (``seeds``: uint64, one per table)."""
    (reset_seeded_parallel if use_parallel(len(seeds)) else reset_seeded_serial)(state, seeds)


def step(state: TableState, actions: np.ndarray, autoreset: bool = False) -> None:
    """One tick on every table; ``actions``: int64, shape (tables, players)."""
    (step_parallel if use_parallel(actions.shape[0]) else step_serial)(state, actions, autoreset)


def sample(mask: np.ndarray, rng: np.ndarray, out: np.ndarray) -> None:
    """Random legal actions into ``out`` (int64, (tables, players)) from ``mask``, drawing from ``rng``."""
    (sample_parallel if use_parallel(mask.shape[0]) else sample_serial)(mask, rng, out)
