"""The top scripted rung, ``search``: the heuristic improved by rollouts on the engine's own rules, with a
memory of the own stock and waste. See docs/guides/evaluation.md.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from nertz_env.agents.kernels import (
    PRIO_FLIP,
    PRIO_NERTZ_LAKE,
    S_LAKE,
    hidden_cards,
    rollout_values,
    rollout_workspace,
)
from nertz_env.agents.memory import SeatMemory
from nertz_env.agents.scripted import HeuristicAgent
from nertz_env.config import NertzConfig

_PRIOR_TICKS = 10


class SearchAgent(HeuristicAgent):
    """Heuristic rollouts on the own layout with a memory of the own stock; its options (``rollouts``,
    ``horizon``, ``candidates``, ``others``, ``margin``, ``gamma``, ``memory``, ``nertz_value``,
    ``wait_prob``) are in the options table of docs/guides/evaluation.md."""

    name = "search"
    _seat: SeatMemory  # the seat's memory, made in reset
    PARAMS: ClassVar[dict[str, type]] = {
        "rollouts": int,
        "horizon": int,
        "candidates": int,
        "others": float,
        "margin": float,
        "gamma": float,
        "memory": bool,
        "nertz_value": float,
        "wait_prob": float,
    }

    def __init__(
        self,
        rollouts: int = 32,
        horizon: int = 20,
        candidates: int = 5,
        others: float = 0.3,
        margin: float = 0.15,
        gamma: float = 0.9,
        memory: bool = True,
        nertz_value: float | None = None,
        wait_prob: float = 0.0,
    ) -> None:
        super().__init__(wait_prob)
        if rollouts < 0 or horizon < 1 or candidates < 1:
            raise ValueError("rollouts must be >= 0, horizon and candidates >= 1")
        if not (np.isfinite(others) and others >= 0.0) or not 0.0 < gamma <= 1.0:
            raise ValueError("others must be a finite number >= 0 and gamma in (0, 1]")
        if not (np.isfinite(margin) and margin >= 0.0):
            raise ValueError(f"margin must be a finite number >= 0, got {margin}")
        if nertz_value is not None and not (np.isfinite(nertz_value) and nertz_value >= 0.0):
            raise ValueError(f"nertz_value must be a finite number >= 0, got {nertz_value}")
        self.rollouts = int(rollouts)
        self.horizon = int(horizon)
        self.candidates = int(candidates)
        self.others = float(others)
        self.margin = float(margin)
        self.gamma = float(gamma)
        self.memory = bool(memory)
        self.nertz_value = None if nertz_value is None else float(nertz_value)
        self._cards = np.zeros(64, dtype=np.int64)
        self._value = np.zeros(2, dtype=np.float64)
        self._work: tuple = ()  # the seat table and rollout scratch space, made in reset
        self._lake_heights = np.tile(np.arange(1, 14, dtype=np.int64), 4)
        self._ticks = self._others_sum = self._lake_total = 0  # the lake cards seen this round (_remember)

    def others_rate(self) -> float:
        """Lake cards the other players add per tick: the ones seen this round, after a prior of ``others``
        per opponent worth ``_PRIOR_TICKS`` ticks."""
        assert self.config is not None
        prior = self.others * (self.config.num_players - 1)
        if not self._ticks:
            return prior
        return (self._others_sum + prior * _PRIOR_TICKS) / (self._ticks - 1 + _PRIOR_TICKS)

    def reset(self, config: NertzConfig, seat: int, seed: int | None = None) -> None:
        super().reset(config, seat, seed)
        self._work = rollout_workspace(config)
        self._seat = SeatMemory(config, self.memory)
        self._state = self._seat.view  # the heuristic reads the seat's memory, not the observation alone
        self._value[:] = (config.nertz_penalty if self.nertz_value is None else self.nertz_value, 1.0)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        tools = self._tools()
        self._remember(observation, self._state)
        a = 0 if self._slow() else self._decide(tools, action_mask)
        self._seat.predict(a)
        return a

    def played(self, action: int) -> None:
        """The seat played ``action`` instead of what :meth:`act` returned: predict from that move."""
        super().played(action)
        self._seat.predict(action)

    def _remember(self, observation: np.ndarray, s: np.ndarray) -> None:
        """Bring the seat's memory up to this observation (its view is ``s``), and count the lake cards the
        other players added."""
        seat = self._seat
        own = seat.lake_count
        if seat.observe(observation):  # the first tick, or a new deal
            self._ticks = 0
            self._others_sum = 0
        total = int(self._lake_heights @ s[S_LAKE : S_LAKE + 52])  # cards in the lake
        if self._ticks > 0:
            self._others_sum += max(0, total - self._lake_total - (seat.lake_count - own))
        self._ticks += 1
        self._lake_total = total

    def _choose(self, s: np.ndarray, action_mask: np.ndarray) -> int:
        best = super()._choose(s, action_mask)  # the heuristic's own choice
        # a Nertz card to the lake (or a call) at once; and the heuristic's choice when the seat lost track of
        # which of its own cards are in the lake (say, it joined mid-round): rollouts would deal its hidden
        # cards from the wrong set
        if self._prio[best] >= PRIO_NERTZ_LAKE or not self._seat.lake_known:
            return best
        cands = self._candidates(best, action_mask)  # the default move first
        if self.rollouts == 0 or len(cands) <= 1:
            return cands[0]
        values = self._values(s, cands)
        if values is None:  # the memory is out of step with the table
            return cands[0]
        k = int(np.argmax(values))
        return cands[k] if values[k] > values[0] + self.margin else cands[0]

    def _candidates(self, first: int, action_mask: np.ndarray) -> list[int]:
        """``first``, then the heuristic's best other legal actions down to a flip: ``candidates`` in all."""
        prio = self._prio
        order = np.argsort(-prio, kind="stable")
        cands = [first] + [
            int(a) for a in order[: self.candidates] if a != first and action_mask[a] and prio[a] >= PRIO_FLIP
        ]
        return cands[: self.candidates]

    def _values(self, s: np.ndarray, cands: list[int]) -> np.ndarray | None:
        """The rollout value of each candidate action from the state ``s`` (same simulated deals for all of
        them), or None when the hidden cards cannot be worked out (the memory is out of step)."""
        tools = self._tools()
        n = hidden_cards(s, tools.params, self._seat.lake_own, self._cards)
        if n < 0:
            return None
        values = np.zeros(len(cands), dtype=np.float64)
        rollout_values(
            s,
            np.array(cands, dtype=np.int64),
            len(cands),
            tools.params,
            tools.columns,
            tools.reverse_run,
            self._cards,
            n,
            self.rollouts,
            self.horizon,
            self._policy,
            self.gamma,
            self._value,
            self.others_rate(),
            np.uint64(self.rng.integers(2**63)),
            values,
            *self._work,
        )
        return values
