"""What a seat remembers, rebuilt from its own observations and moves: its stock and waste, its own cards in the
lake, the cards it has seen. ``search`` plans with it, and a policy trained with the ``memory`` observation
option plays with it at tables without the option (docs/env/nertz.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nertz_env.actions import JOKER_LAKE, LAKE
from nertz_env.agents.kernels import (
    ME,
    P_OFF,
    STATE_SIZE,
    apply_view,
    read_state,
    recall,
    seat_tables,
    stall_view,
    top_of,
    write_memory,
)
from nertz_env.agents.scripted import table_tools
from nertz_env.config import NertzConfig
from nertz_env.engine.batch import bound
from nertz_env.observation import O_STATUS, STATUS_FIELDS

_TICK = STATUS_FIELDS.index("tick_frac")
_STALLS = STATUS_FIELDS.index("stalls")
_OWN_LAKE = STATUS_FIELDS.index("own_lake_frac")


class SeatMemory:
    """A seat's memory of its own stock and waste in the kernels' view (:attr:`view`), completed each tick
    (:meth:`observe`) from what its last move (:meth:`predict`, the engine's rules) left there; also its own
    cards in the lake (:attr:`lake_own`) and the cards seen. ``remember=False`` keeps only what the
    observation shows."""

    def __init__(self, config: NertzConfig, remember: bool = True) -> None:
        self.params = table_tools(config).params
        self.columns = table_tools(config).columns
        self.deck = config.deck_size
        self.remember = remember
        self.status = int(self.params[P_OFF + O_STATUS])
        self.view = np.zeros(STATE_SIZE, dtype=np.int64)  # what the seat knows now
        self._before = np.zeros(STATE_SIZE, dtype=np.int64)  # the view the last move was made from
        self._predicted = np.zeros(STATE_SIZE, dtype=np.int64)  # the view after it, as planned
        self._table = seat_tables(config, 1)
        self._bind()
        self.lake_own = np.zeros(53, dtype=np.int64)  # own cards in the lake (jokers at 52)
        self.seen = np.zeros(52, dtype=np.int64)  # 1 for an own card seen this round (see write)
        self.lake_count = 0  # own cards in the lake, as the status shows them
        self.lake_known = True  # lake_own holds which they are (False: the seat joined mid-round)
        self._stalls = 0.0
        self._pending = -1  # the own card the last move sent to the lake (52 a joker; -1 none)
        self._predicting = False

    def _bind(self) -> None:
        # the compiled move for these argument types: numba's dispatcher would type the seat table's ~40 arrays
        # on every call, most of a move's time
        self._apply = bound(apply_view, self._predicted, 1, self._table, 0, ME)

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_apply"}  # (a compiled entry point: bound anew)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._bind()

    def observe(self, observation: np.ndarray) -> bool:
        """Bring the memory up to this observation of the seat; True when it starts afresh (a new deal, or the
        first observation the seat gets)."""
        s = self.view
        read_state(observation, self.params, s)
        status = observation[self.status : self.status + len(STATUS_FIELDS)]
        stalls, lake = float(status[_STALLS]), round(float(status[_OWN_LAKE]) * self.deck)
        fresh = status[_TICK] == 0.0 or not self._predicting
        if fresh:
            self.lake_own[:] = 0
            self.seen[:] = 0
            self.lake_known = lake == 0
        else:
            if self.remember:
                if stalls > self._stalls:  # the stall rule acted after the last tick
                    stall_view(self._predicted, self._table, 0, ME)
                    stall_view(self._before, self._table, 0, ME)
                recall(s, self._predicted, self._before)
            if lake == self.lake_count + 1 and self._pending >= 0:
                self.lake_own[self._pending] += 1
            elif lake != self.lake_count:
                self.lake_known = False
        self.lake_count, self._stalls = lake, stalls
        return fresh

    def predict(self, action: int) -> None:
        """The seat sent ``action`` from the current view: the next :meth:`observe` checks the stock and waste
        it leaves, and the own lake card it may add (call it again when the seat played another action)."""
        kind, src = self.columns[0, action], self.columns[1, action]
        self._pending = int(top_of(self.view, src)) if kind == LAKE else (52 if kind == JOKER_LAKE else -1)
        self._before[:] = self.view
        self._predicted[:] = self.view
        if self.remember:  # the engine's move, on the seat table (see agents.kernels)
            self._apply(self._predicted, action, self._table, 0, ME)
        self._predicting = True

    def write(self, out: np.ndarray, base: int) -> None:
        """Write the ``memory`` option's slices into ``out[base:]`` as the engine does, once per observation
        (after :meth:`observe`; it notes the cards the view shows as seen)."""
        write_memory(self.view, self.seen, self.lake_own[52], self.params, out, base)
