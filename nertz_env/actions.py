"""The action table, generated once per config: one fixed-size ``Discrete`` space covering every move.

Layout of the table (``W`` = ``work_piles``; blocks marked optional exist only when their option is on)::

    index                                  kind      meaning
    0                                      wait      do nothing this tick (always legal)
    1                                      flip      turn `draw` cards of the stock onto the waste (or recycle)
    LAKE   + src                           lake      play the top of a source to the lake
    TOWORK + src*W + j      (src 0 or 1)   to_work   Nertz top / waste top onto work pile j
    RUN    + (i*(W-1)+j')*13 + (L-1)       run       move the top L cards of work pile i onto work pile j
                                                     (j' = j, or j - 1 when j > i)
    CALL                    (optional)     call      call Nertz (call_mode="manual")
    TUCK   + src*W + j      (optional)     tuck      slide the Nertz / waste top under work pile j's base
    ROTATE                  (optional)     rotate    move the stock's top card to its bottom
    JLAKE  + src*4 + s      (optional)     joker     play a joker from a source to the lake as suit s

Sources: 0 = Nertz pile, 1 = waste, 2 + i = work pile i. The numbers in the engine come from
``ActionTable.layout``; rules and tests name actions through ``ActionTable.index`` or ``ActionTable.lookup``.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from nertz_env._text import short
from nertz_env.cards import SUITS
from nertz_env.config import NertzConfig, is_int

# Action kinds (shared with the engine).
WAIT, FLIP, LAKE, TO_WORK, RUN, CALL, TUCK, ROTATE, JOKER_LAKE = range(9)
KIND_NAMES = ("wait", "flip", "lake", "to_work", "run", "call", "tuck", "rotate", "joker_lake")
# Sources.
SRC_NERTZ, SRC_WASTE, SRC_WORK0 = 0, 1, 2
MAX_RUN = 13
# Slots of ActionTable.layout, the integers the engine reads.
L_NUM, L_LAKE, L_TOWORK, L_RUN, L_CALL, L_TUCK, L_ROTATE, L_JLAKE, L_W, LAYOUT_SIZE = range(10)


class Action(NamedTuple):
    """One row of the table. ``src``/``dst`` are -1 where they do not apply; ``dst`` is a work pile."""

    kind: int
    src: int = -1
    dst: int = -1
    length: int = 0
    suit: int = -1


def _source(src: int, words: bool = False) -> str:
    """A source's short name (``"work2"``), or with ``words`` its top card in words."""
    if src >= SRC_WORK0:
        return f"work pile {src - SRC_WORK0}'s exposed card" if words else f"work{src - SRC_WORK0}"
    return ("the Nertz pile's top", "the waste's top")[src] if words else ("nertz", "waste")[src]


class ActionTable:
    """All actions of one config, in index order, with lookups both ways.

    Build it with :func:`action_table`, which makes one per config and shares it: ``layout`` is read-only.
    """

    def __init__(self, config: NertzConfig) -> None:
        self.config = config
        w = config.work_piles
        rows: list[Action] = [Action(WAIT), Action(FLIP)]
        layout = np.full(LAYOUT_SIZE, -1, dtype=np.int32)
        layout[L_W] = w
        layout[L_LAKE] = len(rows)
        rows += [Action(LAKE, src=s) for s in range(2 + w)]
        layout[L_TOWORK] = len(rows)
        rows += [Action(TO_WORK, src=s, dst=j, length=1) for s in (SRC_NERTZ, SRC_WASTE) for j in range(w)]
        layout[L_RUN] = len(rows)
        for i in range(w):
            for j in range(w):
                if j != i:
                    rows += [Action(RUN, src=SRC_WORK0 + i, dst=j, length=n) for n in range(1, MAX_RUN + 1)]
        if config.call_mode == "manual":
            layout[L_CALL] = len(rows)
            rows.append(Action(CALL))
        if config.allow_tuck:
            layout[L_TUCK] = len(rows)
            rows += [Action(TUCK, src=s, dst=j, length=1) for s in (SRC_NERTZ, SRC_WASTE) for j in range(w)]
        if config.allow_rotate:
            layout[L_ROTATE] = len(rows)
            rows.append(Action(ROTATE))
        if config.jokers > 0:
            layout[L_JLAKE] = len(rows)
            rows += [Action(JOKER_LAKE, src=s, suit=u) for s in range(2 + w) for u in range(4)]
        layout[L_NUM] = len(rows)
        layout.flags.writeable = False  # shared by everyone holding this config's table
        self.rows: tuple[Action, ...] = tuple(rows)
        self.layout = layout
        self._index = {a: i for i, a in enumerate(self.rows)}
        self._names = tuple(self._name(a) for a in self.rows)
        self._by_name = {n: i for i, n in enumerate(self._names)}

    @property
    def n(self) -> int:
        """Number of actions (the size of the ``Discrete`` space)."""
        return len(self.rows)

    def __getitem__(self, index: int) -> Action:
        return self.rows[self._check(index)]

    def _check(self, index: int) -> int:
        if not is_int(index) or not 0 <= index < len(self.rows):
            raise ValueError(f"action index must be an integer from 0 to {self.n - 1}, got {short(index)}")
        return int(index)

    def index(self, kind: int, src: int = -1, dst: int = -1, length: int = 0, suit: int = -1) -> int:
        """Index of an action given its fields; ``ValueError`` if this config has no such action."""
        if kind in (TO_WORK, TUCK):
            length = 1  # a single card
        a = Action(kind, src, dst, length, suit)
        try:
            return self._index[a]
        except KeyError:
            raise ValueError(f"this config has no action {a}") from None

    def name(self, index: int) -> str:
        """Short stable name of an action, e.g. ``"lake:waste"`` or ``"run:work0>2x3"``."""
        return self._names[self._check(index)]

    def lookup(self, name: str) -> int:
        """Index of the action with this short name."""
        try:
            return self._by_name[name]
        except KeyError:
            raise ValueError(
                f"no action named {short(name)} in this config (e.g. {self._names[:4]})"
            ) from None

    @staticmethod
    def _name(a: Action) -> str:
        k = KIND_NAMES[a.kind]
        if a.kind in (WAIT, FLIP, CALL, ROTATE):
            return k
        if a.kind == LAKE:
            return f"lake:{_source(a.src)}"
        if a.kind == JOKER_LAKE:
            return f"joker_lake:{_source(a.src)}:{SUITS[a.suit]}"
        if a.kind == RUN:
            return f"run:{_source(a.src)}>{a.dst}x{a.length}"
        return f"{k}:{_source(a.src)}>{a.dst}"

    def describe(self, index: int) -> str:
        """The action in words."""
        a = self[index]
        if a.kind == WAIT:
            return "wait a tick"
        if a.kind == FLIP:
            return f"flip {self.config.draw} from the stock (or turn the waste over when the stock is empty)"
        if a.kind == LAKE:
            return f"play {_source(a.src, True)} to the lake"
        if a.kind == TO_WORK:
            return f"play {_source(a.src, True)} onto work pile {a.dst}"
        if a.kind == RUN:
            cards = "card" if a.length == 1 else "cards"
            return f"move the top {a.length} {cards} of work pile {a.src - SRC_WORK0} onto work pile {a.dst}"
        if a.kind == CALL:
            return "call Nertz"
        if a.kind == TUCK:
            return f"tuck {_source(a.src, True)} under work pile {a.dst}'s base"
        if a.kind == ROTATE:
            return "move the stock's top card to its bottom"
        source = _source(a.src, True).replace(" top", "")
        return f"play a joker from {source} to the lake as a {SUITS[a.suit]}"

    def arrays(self) -> dict[str, np.ndarray]:
        """Column arrays of the table (kind, src, dst, length, suit), int8, for vectorised use."""
        cols = np.array(self.rows, dtype=np.int16).reshape(len(self.rows), 5)
        return {f: cols[:, i].astype(np.int8) for i, f in enumerate(Action._fields)}


@functools.cache
def action_table(config: NertzConfig) -> ActionTable:
    """The action table of a config, built once per config (a config is frozen and hashable) and shared."""
    return ActionTable(config)
