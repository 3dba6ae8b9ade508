"""Shared test setup: one torch thread (2-core machines), the variants list, card-conservation checks."""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

try:  # training tests use torch; on 2 cores more threads collapse throughput
    import torch

    torch.set_num_threads(1)
except ImportError:  # pragma: no cover
    pass


def card_counts(state) -> np.ndarray:  # type: ignore[no-untyped-def]
    """(tables, players, 53) counts of every card code each seat's deck has across the table (jokers -> 52).

    Vectorised over the batch so the invariant can be checked after every tick of thousands of games.
    """
    t, p = state.nertz_len.shape
    bins = 53
    idx_parts = []

    def add(cards: np.ndarray, valid: np.ndarray, seat: np.ndarray) -> None:
        codes = np.where(cards >= 52, 52, cards).astype(np.int64)
        tt = np.broadcast_to(np.arange(t).reshape((t,) + (1,) * (cards.ndim - 1)), cards.shape)
        flat = (tt * p + seat) * bins + codes
        idx_parts.append(flat[valid])

    seat_p = np.arange(p).reshape(1, p, 1)
    k = np.arange(13)
    add(state.nertz, k < state.nertz_len[..., None], np.broadcast_to(seat_p, state.nertz.shape))
    add(state.work, k < state.work_len[..., None], np.broadcast_to(seat_p[..., None], state.work.shape))
    kd = np.arange(state.stock.shape[2])
    add(state.stock, kd < state.stock_len[..., None], np.broadcast_to(seat_p, state.stock.shape))
    add(state.waste, kd < state.waste_len[..., None], np.broadcast_to(seat_p, state.waste.shape))
    lake = state.lake.astype(np.int64)
    real = np.where(lake >= 64, 52, lake)
    fvalid = k < state.lake_len[..., None]
    add(real, fvalid, state.lake_owner.astype(np.int64))
    counts = np.bincount(np.concatenate(idx_parts), minlength=t * p * bins)
    return counts.reshape(t, p, bins)


def expected_counts(jokers: int) -> np.ndarray:
    e = np.ones(53, dtype=np.int64)
    e[52] = jokers
    return e


# ---------------------------------------------------------------- isolated tests (their own venvs, clusters)
# Tests marked ``isolated`` build virtual environments of their own (the built wheel on every Python, clients
# whose pins conflict with the dev extras) or start clusters; they take minutes, so the README's test command
# skips them with a reason and CI runs them in a phase of their own: ``pytest -m isolated --isolated``.
def pytest_addoption(parser) -> None:  # type: ignore[no-untyped-def]
    parser.addoption(
        "--isolated",
        action="store_true",
        default=False,
        help="run the tests marked isolated (own venvs or clusters; CI's 'isolated' phase)",
    )


def pytest_collection_modifyitems(config, items) -> None:  # type: ignore[no-untyped-def]
    if config.getoption("--isolated"):
        return
    import pytest

    skip = pytest.mark.skip(reason="isolated: builds its own venvs or cluster; run with pytest -m isolated --isolated")
    for item in items:
        if "isolated" in item.keywords:
            item.add_marker(skip)
