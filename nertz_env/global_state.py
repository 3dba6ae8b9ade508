"""The global state: the whole table as one vector, hidden cards included, for centralized critics (PettingZoo's
``state()``; layout: docs/env/api.md, "The global state"). A deck's jokers take its joker slots in the order
Nertz pile, stock, waste, work piles, lake.
"""

from __future__ import annotations

import functools

import gymnasium
import numpy as np

from nertz_env.cards import JOKER, LAKE_JOKER_FLAG, NUM_CARDS
from nertz_env.config import NertzConfig
from nertz_env.engine.state import MAX_PILE, TableState
from nertz_env.observation import STATUS_FIELDS, obs_layout


class StateLayout:
    """Named slices of the global state vector for one config (see the module docstring)."""

    def __init__(self, config: NertzConfig) -> None:
        self.config = config
        p, w, d = config.num_players, config.work_piles, config.deck_size
        self.locations: tuple[str, ...] = (
            "nertz",
            "stock",
            "waste",
            *(f"work_{j}" for j in range(w)),
            "lake",
        )
        self.deck = d
        self.card_width = len(self.locations) + 1  # the location one-hot, then the depth
        cards = p * d * self.card_width
        self.size = cards + p * len(STATUS_FIELDS)
        self.slices: dict[str, slice] = {"cards": slice(0, cards), "status": slice(cards, self.size)}
        self._status = obs_layout(config).slices["status"]

    def cards(self, state: np.ndarray) -> np.ndarray:
        """The ``cards`` slice of a state (or of a batch) as ``(..., P, D, L + 1)``."""
        cfg = self.config
        return state[..., self.slices["cards"]].reshape(
            *state.shape[:-1], cfg.num_players, self.deck, self.card_width
        )

    def fill(self, state: TableState, out: np.ndarray) -> np.ndarray:
        """Write the state of every table of ``state`` into ``out`` (float32, (T, size)) and return it."""
        t_n, p_n = state.nertz_len.shape
        d, lw = self.deck, self.card_width
        parts: list[tuple[np.ndarray, ...]] = []

        def add(
            pile: np.ndarray, lens: np.ndarray, loc: int, cap: int, owner: np.ndarray | None = None
        ) -> None:
            valid = np.arange(pile.shape[-1]) < lens[..., None]
            t, p, i = np.nonzero(valid)  # p: the seat, or in the lake the foundation, whose owner is the seat
            depth = (lens[t, p].astype(np.int64) - 1 - i) / cap
            seat = p if owner is None else owner[t, p, i].astype(np.int64)
            parts.append((t, seat, pile[t, p, i].astype(np.int64), np.full(t.size, loc), depth))

        add(state.nertz, state.nertz_len, 0, MAX_PILE)
        add(state.stock, state.stock_len, 1, d)
        add(state.waste, state.waste_len, 2, d)
        w = state.work.shape[2]
        for j in range(w):
            add(state.work[:, :, j], state.work_len[:, :, j], 3 + j, MAX_PILE)
        lake = np.where(state.lake >= LAKE_JOKER_FLAG, JOKER, state.lake)  # a declared joker: a joker
        add(lake, state.lake_len, 3 + w, MAX_PILE, state.lake_owner)

        tt, pp, code, loc, depth = (np.concatenate(x) for x in zip(*parts, strict=True))
        card = code.copy()
        joker = code >= NUM_CARDS  # a joker with no value or one fixed on a work pile
        if joker.any():  # the deck's jokers take its joker slots in scan order
            key = tt[joker] * p_n + pp[joker]
            order = np.argsort(key, kind="stable")
            sk = key[order]  # a joker's ordinal: its place in the sorted keys minus its seat's first place
            ordinal = np.empty_like(order)
            ordinal[order] = np.arange(sk.size) - np.searchsorted(sk, sk)
            card[joker] = NUM_CARDS + ordinal
        cards = np.zeros((t_n, p_n, d, lw), np.float32)
        cards[tt, pp, card, loc] = 1.0
        cards[tt, pp, card, lw - 1] = depth
        out[:, self.slices["cards"]] = cards.reshape(t_n, -1)
        out[:, self.slices["status"]] = state.obs[:, :, self._status].reshape(t_n, -1)
        return out


@functools.cache
def state_layout(config: NertzConfig) -> StateLayout:
    """The global state layout of a config, built once per config and shared."""
    return StateLayout(config)


def state_space(config: NertzConfig, tables: int | None = None) -> gymnasium.spaces.Box:
    """``Box(0, 1, (S,), float32)``, or ``(tables, S)`` for a batch."""
    size = state_layout(config).size
    shape = (size,) if tables is None else (tables, size)
    return gymnasium.spaces.Box(0.0, 1.0, shape, np.float32)
