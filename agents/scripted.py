"""The scripted rungs of the ladder: ``random``, ``greedy`` and ``heuristic`` (the seeds' strategy as a
priority list, scored by compiled kernels). See docs/guides/evaluation.md.
"""

from __future__ import annotations

import functools
from typing import ClassVar

import numpy as np

from nertz_env.actions import JOKER_LAKE, LAKE, RUN, action_table
from nertz_env.agents.kernels import (
    STATE_SIZE,
    WASTE_POLICIES,
    heuristic_priorities,
    pick_best,
    read_state,
    table_params,
)
from nertz_env.config import NertzConfig


class TableTools:
    """Per-config lookups shared by every agent at tables of that config."""

    def __init__(self, config: NertzConfig) -> None:
        self.params, self.columns = table_params(config)
        kind = self.columns[0]
        self.is_lake = (kind == LAKE) | (kind == JOKER_LAKE)
        self.n_actions = kind.shape[0]
        # index of the reverse of each run (the same length back from dst to src), -1 for other actions
        table = action_table(config)
        self.reverse_run = np.array(
            [table.index(RUN, a.dst + 2, a.src - 2, a.length) if a.kind == RUN else -1 for a in table.rows],
            dtype=np.int64,
        )


table_tools = functools.cache(TableTools)  # one per config, shared by every agent at its tables


class _Base:
    """Shared plumbing: the agent's own generator, the config's lookups, ``wait_prob``."""

    name = "base"
    #: parameters accepted by ``make_agent`` specs, with their types
    PARAMS: ClassVar[dict[str, type]] = {"wait_prob": float}

    def __init__(self, wait_prob: float = 0.0) -> None:
        if not 0.0 <= wait_prob <= 1.0:
            raise ValueError(f"wait_prob must be in [0, 1], got {wait_prob}")
        self.wait_prob = float(wait_prob)
        self.rng = np.random.default_rng()
        self.config: NertzConfig | None = None
        self.seat = 0
        self.tools: TableTools | None = None

    def reset(self, config: NertzConfig, seat: int, seed: int | None = None) -> None:
        self.config = config
        self.seat = seat
        self.rng = np.random.default_rng(seed)
        self.tools = table_tools(config)

    def _tools(self) -> TableTools:
        if self.tools is None:
            raise RuntimeError(f"{self.name}: call reset(config, seat, seed) before act()")
        return self.tools

    def played(self, action: int) -> None:
        """Tell the agent that its seat played ``action`` this tick instead of what :meth:`act` returned
        (another policy drove the seat, as when a teacher labels a student's states). Stateless agents
        ignore it; agents that remember their last move take ``action`` as that move."""

    def _slow(self) -> bool:
        """True when this tick is one the agent sits out (``wait_prob``)."""
        return self.wait_prob > 0.0 and self.rng.random() < self.wait_prob

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class RandomAgent(_Base):
    """Uniformly random over the legal actions."""

    name = "random"
    PARAMS: ClassVar[dict[str, type]] = {}

    def __init__(self) -> None:
        super().__init__(0.0)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        legal = np.flatnonzero(action_mask)
        return int(legal[self.rng.integers(legal.shape[0])])


class GreedyAgent(_Base):
    """Any lake play first (chosen at random among them), else a uniformly random legal action."""

    name = "greedy"

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        tools = self._tools()
        if self._slow():
            return 0
        legal = action_mask.astype(bool)
        lakes = np.flatnonzero(legal & tools.is_lake)
        pool = lakes if lakes.shape[0] else np.flatnonzero(legal)
        return int(pool[self.rng.integers(pool.shape[0])])


class HeuristicAgent(_Base):
    """The seeds' strategy as a priority list; ``wait_prob`` and ``waste`` (when to play the waste top onto a
    work pile) are in the options table of docs/guides/evaluation.md."""

    name = "heuristic"
    PARAMS: ClassVar[dict[str, type]] = {"wait_prob": float, "waste": str}

    def __init__(self, wait_prob: float = 0.0, waste: str = "dig") -> None:
        super().__init__(wait_prob)
        if waste not in WASTE_POLICIES:
            raise ValueError(f"waste must be one of {WASTE_POLICIES}, got {waste!r}")
        self.waste = waste
        self._policy = WASTE_POLICIES.index(waste)
        self._state = np.zeros(STATE_SIZE, dtype=np.int64)
        self._prio = np.zeros(0, dtype=np.int64)
        self._banned = -1

    def reset(self, config: NertzConfig, seat: int, seed: int | None = None) -> None:
        super().reset(config, seat, seed)
        self._prio = np.zeros(self._tools().n_actions, dtype=np.int64)
        self._banned = -1

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        tools = self._tools()
        if self._slow():
            return 0
        read_state(observation, tools.params, self._state)
        return self._decide(tools, action_mask)

    def _decide(self, tools: TableTools, action_mask: np.ndarray) -> int:
        """The priorities of the actions from the view ``self._state``, and :meth:`_choose`'s pick of them."""
        s = self._state
        heuristic_priorities(s, action_mask, tools.params, tools.columns, self._policy, self._banned, self._prio)
        a = self._choose(s, action_mask)
        self._banned = int(tools.reverse_run[a])
        return a

    def _choose(self, s: np.ndarray, action_mask: np.ndarray) -> int:
        """The heuristic's best legal action (ties broken by the own generator)."""
        return int(pick_best(self._prio, action_mask, self.rng.random()))

    def played(self, action: int) -> None:
        self._banned = int(self._tools().reverse_run[action])
