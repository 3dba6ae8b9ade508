"""Drivers that run the rules over a batch of tables: reset, step (with or without autoreset), sampling.

Each driver exists twice from the same source: compiled serially (best for a handful of tables, no thread
start-up cost) and with ``parallel=True`` (tables spread over all cores). ``use_parallel`` picks one.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from nertz_env.engine.rules import (
    observe_table,
    reset_table,
    rng_below,
    seed_table,
    step_table,
)
from nertz_env.engine.state import DONE_NO, TableState

PARALLEL_MIN_TABLES = 64


def _reset_seeded(S, seeds):
    """Seed table t with ``seeds[t]`` and deal a new episode on every table."""
    for t in prange(seeds.shape[0]):
        seed_table(S.rng, t, seeds[t])
        reset_table(S, t)


def _step(S, actions, autoreset):
    """One tick on every table. With ``autoreset``, a table that ended on the previous call is dealt a new
    episode instead (its actions are ignored; Gymnasium's "next-step" autoreset)."""
    for t in prange(actions.shape[0]):
        if autoreset and S.done[t] != DONE_NO:
            reset_table(S, t)
        else:
            step_table(S, t, actions)


def _observe(S):
    for t in prange(S.tick.shape[0]):
        observe_table(S, t)


def _sample(mask, rng, out):
    """Uniformly random legal action per (table, seat) from int8 ``mask``, drawn from the caller's ``rng``
    (uint64 splitmix64 states, one per table: agent randomness never touches the game's generator)."""
    for t in prange(mask.shape[0]):
        for p in range(mask.shape[1]):
            m = mask[t, p]
            count = 0
            for a in range(m.shape[0]):
                count += m[a]
            k = rng_below(rng, t, count)
            for a in range(m.shape[0]):
                if m[a]:
                    if k == 0:
                        out[t, p] = a
                        break
                    k -= 1


reset_seeded_serial = njit(cache=True)(_reset_seeded)
reset_seeded_parallel = njit(cache=True, parallel=True)(_reset_seeded)
step_serial = njit(cache=True)(_step)
step_parallel = njit(cache=True, parallel=True)(_step)
observe_serial = njit(cache=True)(_observe)
sample_serial = njit(cache=True)(_sample)
sample_parallel = njit(cache=True, parallel=True)(_sample)


def use_parallel(num_tables: int) -> bool:
    return num_tables >= PARALLEL_MIN_TABLES


def reset(state: TableState, seeds: np.ndarray) -> None:
    """Seed and deal every table (``seeds``: uint64, one per table)."""
    (reset_seeded_parallel if use_parallel(len(seeds)) else reset_seeded_serial)(state, seeds)


def step(state: TableState, actions: np.ndarray, autoreset: bool = False) -> None:
    """One tick on every table; ``actions`` int64 of shape (tables, players)."""
    (step_parallel if use_parallel(actions.shape[0]) else step_serial)(state, actions, autoreset)


def sample(mask: np.ndarray, rng: np.ndarray, out: np.ndarray) -> None:
    """Random legal actions into ``out`` (int64, (tables, players)) from ``mask`` using agent ``rng``."""
    (sample_parallel if use_parallel(mask.shape[0]) else sample_serial)(mask, rng, out)
