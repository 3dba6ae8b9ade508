"""Every option of the rules contract (``shared/RULES.md``, by its names), validated, with its default: the one
:class:`NertzConfig` of a table. A bad option raises ``ValueError`` naming the option and the allowed values.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

import numpy as np

if sys.version_info >= (3, 11):
    from typing import Unpack
else:
    from typing_extensions import Unpack

from nertz_env._text import short

MIN_PLAYERS, MAX_PLAYERS = 2, 8
DEFAULT_STALL_TICKS = 100
DEFAULT_MAX_TICKS = 2000
DEFAULT_MAX_ROUNDS = 100
#: the largest value of an option without a bound of its own (the engine keeps options and scores as int32)
MAX_OPTION_INT = 2**31 - 1
#: the most rounds a match may have: the engine counts rounds in an int16
MAX_MATCH_ROUNDS = 2**15 - 1
#: the most recent own moves the observation can hold (``last_moves``)
MAX_LAST_MOVES = 4


def is_int(v: Any) -> bool:
    """An integer (Python's or numpy's), not a bool."""
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_bool(v: Any) -> bool:
    return isinstance(v, (bool, np.bool_))


@dataclasses.dataclass(frozen=True)
class NertzConfig:
    """The rules of one table, with the defaults of RULES.md, and two observation options (``last_moves``,
    ``memory``). Each option's range and meaning: the option table of docs/env/rules.md."""

    num_players: int = 4
    nertz_size: int = 13
    work_piles: int = 4
    draw: int = 3
    recycle: str = "flip"
    max_redeals: int | None = None
    empty_pile_from_nertz_first: bool = False
    call_mode: str = "auto"
    call_bonus: int = 0
    false_call_penalty: int = 5
    nertz_penalty: int = 2
    stall_ticks: int | None = None
    max_ticks: int | None = None
    target_score: int | None = None
    rounds: int | None = None
    max_rounds: int | None = None
    teams: bool | tuple[tuple[int, ...], ...] = False
    turn_based: bool = False
    jokers: int = 0
    allow_tuck: bool = False
    allow_rotate: bool = False
    last_moves: int = 0
    memory: bool = False

    def __post_init__(self) -> None:
        def bad(name: str, allowed: str) -> ValueError:
            return ValueError(f"{name}={short(getattr(self, name))} is not allowed: {name} must be {allowed}")

        def int_range(name: str, lo: int, hi: int | None, optional: bool = False) -> None:
            v = getattr(self, name)
            if optional and v is None:
                return
            hi = MAX_OPTION_INT if hi is None else hi
            allowed = f"an integer from {lo} to {hi}"
            if optional:
                allowed += " or None"
            if not is_int(v) or not lo <= v <= hi:
                raise bad(name, allowed)
            object.__setattr__(self, name, int(v))

        int_range("num_players", MIN_PLAYERS, MAX_PLAYERS)
        int_range("nertz_size", 8, 13)
        int_range("work_piles", 4, 6)
        int_range("draw", 1, 3)
        int_range("max_redeals", 0, None, optional=True)
        int_range("call_bonus", 0, None)
        int_range("false_call_penalty", 0, None)
        int_range("nertz_penalty", 0, None)
        int_range("stall_ticks", 1, None, optional=True)
        int_range("max_ticks", 1, None, optional=True)
        int_range("target_score", 1, None, optional=True)
        int_range("rounds", 1, MAX_MATCH_ROUNDS, optional=True)
        int_range("max_rounds", 1, MAX_MATCH_ROUNDS, optional=True)
        int_range("jokers", 0, 2)
        int_range("last_moves", 0, MAX_LAST_MOVES)
        if self.recycle not in ("flip", "shuffle"):
            raise bad("recycle", "'flip' or 'shuffle'")
        if self.call_mode not in ("auto", "manual"):
            raise bad("call_mode", "'auto' or 'manual'")
        for name in ("empty_pile_from_nertz_first", "turn_based", "allow_tuck", "allow_rotate", "memory"):
            if not _is_bool(getattr(self, name)):
                raise bad(name, "True or False")
            object.__setattr__(self, name, bool(getattr(self, name)))
        if self.target_score is not None and self.rounds is not None:
            raise ValueError("target_score and rounds are exclusive: a match is played to a score or a count")
        if self.max_rounds is not None and self.target_score is None:
            raise ValueError("max_rounds bounds a match to target_score; set target_score as well")
        object.__setattr__(self, "teams", self._validated_teams(self.teams))

    def _validated_teams(self, teams: Any) -> bool | tuple[tuple[int, ...], ...]:
        n = self.num_players
        if _is_bool(teams):
            if teams and (n % 2 or n < 4):
                raise ValueError(
                    f"teams=True pairs seat i with seat i + n/2 and needs an even num_players of at least 4 "
                    f"(two teams or more), got {n}"
                )
            return bool(teams)
        if isinstance(teams, Sequence) and not isinstance(teams, str):
            groups = []
            for g in teams:
                if not isinstance(g, Sequence) or isinstance(g, str) or not all(is_int(s) for s in g):
                    raise ValueError(f"teams must be True, False or a list of seat lists, got {short(teams)}")
                groups.append(tuple(int(s) for s in g))
            seats = sorted(s for g in groups for s in g)
            if seats != list(range(n)) or any(len(g) == 0 for g in groups):
                raise ValueError(
                    f"teams={short(teams)} must split the seats 0..{n - 1} into non-empty groups, each seat once"
                )
            if len(groups) < 2:
                raise ValueError(
                    f"teams={short(teams)} must split the seats into at least two teams, not one"
                )
            return tuple(groups)
        raise ValueError(f"teams must be True, False or a list of seat lists, got {short(teams)}")

    # ------------------------------------------------------------------ derived values
    @property
    def deck_size(self) -> int:
        """Cards in each player's deck: 52 plus the jokers."""
        return 52 + self.jokers

    @property
    def stall_ticks_resolved(self) -> int:
        """The stall bound in ticks: ``stall_ticks``, or its default (100, times the players when ``turn_based``)."""
        if self.stall_ticks is not None:
            return self.stall_ticks
        return DEFAULT_STALL_TICKS * (self.num_players if self.turn_based else 1)

    @property
    def max_ticks_resolved(self) -> int:
        """The round's tick bound: ``max_ticks``, or its default (2000, times the players when ``turn_based``)."""
        if self.max_ticks is not None:
            return self.max_ticks
        return DEFAULT_MAX_TICKS * (self.num_players if self.turn_based else 1)

    @property
    def max_rounds_resolved(self) -> int:
        """Rounds the episode can last: ``rounds``; 1 without a match; else ``max_rounds`` or its default (100)."""
        if self.rounds is not None:
            return self.rounds
        if self.target_score is None:
            return 1
        return self.max_rounds if self.max_rounds is not None else DEFAULT_MAX_ROUNDS

    @property
    def team_of(self) -> tuple[int, ...]:
        """Team index of every seat (every seat its own team when teams are off)."""
        n = self.num_players
        if self.teams is False:
            return tuple(range(n))
        if self.teams is True:
            half = n // 2
            return tuple(s % half for s in range(n))
        team = [0] * n
        assert isinstance(self.teams, tuple)
        for i, g in enumerate(self.teams):
            for s in g:
                team[s] = i
        return tuple(team)

    def to_dict(self) -> dict[str, Any]:
        """Every option as JSON-ready values (teams as lists); the observation options only when on."""
        d = dataclasses.asdict(self)
        if isinstance(self.teams, tuple):
            d["teams"] = [list(g) for g in self.teams]
        for name in ("last_moves", "memory"):
            if not d[name]:
                del d[name]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> NertzConfig:
        """Inverse of :meth:`to_dict`; unknown keys raise ``ValueError`` naming them."""
        return make_config(**dict(d))


OPTION_NAMES = tuple(f.name for f in dataclasses.fields(NertzConfig))


class Rules(TypedDict, total=False):
    """Every option of :class:`NertzConfig` but the table size, as the env factories take them as keywords
    (``**rules: Unpack[Rules]``): what an IDE completes. Defaults and meanings: docs/env/rules.md, "Options". A
    new option goes here, in :class:`NertzConfig` and in that page's table."""

    nertz_size: int
    work_piles: int
    draw: int
    recycle: str
    max_redeals: int | None
    empty_pile_from_nertz_first: bool
    call_mode: str
    call_bonus: int
    false_call_penalty: int
    nertz_penalty: int
    stall_ticks: int | None
    max_ticks: int | None
    target_score: int | None
    rounds: int | None
    max_rounds: int | None
    teams: bool | Sequence[Sequence[int]]  # the config stores tuples
    turn_based: bool
    jokers: int
    allow_tuck: bool
    allow_rotate: bool
    last_moves: int
    memory: bool


def make_config(num_players: int = 4, **rules: Unpack[Rules]) -> NertzConfig:
    """Build a validated config; unknown option names raise ``ValueError`` listing the known ones."""
    unknown = sorted(set(rules) - set(OPTION_NAMES))
    if unknown:
        shown = short(unknown, 200) if sum(len(k) for k in unknown) > 200 else str(unknown)
        raise ValueError(f"unknown option(s) {shown}; the options are: {', '.join(OPTION_NAMES)}")
    options: dict[str, Any] = dict(rules)  # teams as any seat sequences: the config stores them as tuples
    return NertzConfig(num_players=num_players, **options)
