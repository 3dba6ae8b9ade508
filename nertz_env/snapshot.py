"""``nertz-snapshot/1``: the whole table as a JSON-ready dict, and back into engine state.

The format: docs/guides/snapshots.md. Restoring checks everything and raises :class:`SnapshotError` naming
the field; a restored game continues exactly as the original would have.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import numpy as np

from nertz_env._text import short
from nertz_env.actions import action_table
from nertz_env.cards import (
    JOKER,
    LAKE_JOKER_FLAG,
    NUM_CARDS,
    from_text,
    lake_from_text,
    lake_to_text,
    to_text,
)
from nertz_env.config import NertzConfig, is_int, make_config
from nertz_env.engine.rules import card_colour, card_rank, observe_table
from nertz_env.engine.state import (
    DONE_NO,
    DONE_TERMINATED,
    DONE_TRUNCATED,
    MAX_PILE,
    MEM_KNOWN,
    MEM_UNSEEN,
    PARAMETERS,
    TableState,
    allocate,
)

FORMAT = "nertz-snapshot/1"
RNG_ALGORITHM = "splitmix64"
_DONE_NAMES = {DONE_NO: "running", DONE_TERMINATED: "terminated", DONE_TRUNCATED: "truncated"}
_DONE_CODES = {v: k for k, v in _DONE_NAMES.items()}


class SnapshotError(ValueError):
    """A malformed snapshot; the message names the offending field."""


def round_so_far(snap: dict[str, Any]) -> list[int]:
    """Each seat's score of the round in play, read from a snapshot: its own cards in the lake minus the Nertz
    penalty for the cards left in its Nertz pile. The call bonus and false calls count when the round ends,
    where the engine scores the round itself (``score_round``, the env's ``infos["score"]``)."""
    penalty = int(snap["config"]["nertz_penalty"])
    lake = [0] * len(snap["players"])
    for foundation in snap["lake"]:
        for _card, seat in foundation:
            lake[int(seat)] += 1
    return [lake[p] - penalty * len(pl["nertz"]) for p, pl in enumerate(snap["players"])]


def snapshot_table(state: TableState, config: NertzConfig, t: int = 0) -> dict[str, Any]:
    """Table ``t`` of ``state`` as a ``nertz-snapshot/1`` dict."""
    players = [
        {
            "nertz": [to_text(c) for c in state.nertz[t, p, : state.nertz_len[t, p]]],
            "work": [
                [to_text(c) for c in state.work[t, p, j, : state.work_len[t, p, j]]]
                for j in range(config.work_piles)
            ],
            "stock": [to_text(c) for c in state.stock[t, p, : state.stock_len[t, p]]],
            "waste": [to_text(c) for c in state.waste[t, p, : state.waste_len[t, p]]],
            "redeals": int(state.redeals[t, p]),
            "false_calls": int(state.false_calls[t, p]),
            "match_score": int(state.match_score[t, p]),
        }
        | ({"last_moves": [int(a) for a in state.last_moves[t, p] if a >= 0]} if config.last_moves else {})
        | ({"memory": _memory(state, t, p)} if config.memory else {})
        for p in range(config.num_players)
    ]
    lake = [
        [
            [lake_to_text(state.lake[t, f, k]), int(state.lake_owner[t, f, k])]
            for k in range(state.lake_len[t, f])
        ]
        for f in range(state.lake_n[t])
    ]
    return {
        "format": FORMAT,
        "config": config.to_dict(),
        "tick": int(state.tick[t]),
        "round": int(state.round_idx[t]),
        "since_progress": int(state.since_progress[t]),
        "stalls": int(state.stalls[t]),
        "done": _DONE_NAMES[int(state.done[t])],
        "players": players,
        "lake": lake,
        "rng": {"algorithm": RNG_ALGORITHM, "state": hex(int(state.rng[t]))},
    }


def _memory(state: TableState, t: int, p: int) -> dict[str, list[int]]:
    """What seat ``p`` knows of each card of its stock and waste (MEM_*)."""
    return {
        "stock": state.memory[t, p, 0, : state.stock_len[t, p]].tolist(),
        "waste": state.memory[t, p, 1, : state.waste_len[t, p]].tolist(),
    }


def _field(d: Any, key: str, where: str) -> Any:
    if not isinstance(d, dict):
        raise SnapshotError(f"{where} must be a dict, got {type(d).__name__}")
    if key not in d:
        raise SnapshotError(f"{where}.{key} is missing")
    return d[key]


#: the engine keeps ticks and scores as int32: a larger value is refused here, not an OverflowError on writing
_INT32_MAX = 2**31 - 1


def _int(v: Any, where: str, lo: int, hi: int) -> int:
    if not is_int(v) or not lo <= v <= hi:
        raise SnapshotError(f"{where} must be an integer from {lo} to {hi}, got {short(v)}")
    return int(v)


def _cards(v: Any, where: str, cap: int, free_only: bool) -> list[int]:
    if not isinstance(v, list):
        raise SnapshotError(f"{where} must be a list of cards, got {type(v).__name__}")
    if len(v) > cap:
        raise SnapshotError(f"{where} holds {len(v)} cards, at most {cap} fit")
    out = []
    for k, x in enumerate(v):
        try:
            c = from_text(x)
        except ValueError as e:
            raise SnapshotError(f"{where}[{k}]: {e}") from None
        if free_only and c > JOKER:
            raise SnapshotError(
                f"{where}[{k}]: a joker here has no value yet and is written '**', got {short(x)}"
            )
        out.append(c)
    return out


def _check_run(cards: list[int], where: str) -> None:
    """A work pile must be an ordered run: each card one rank lower and the other colour than the one below.

    A joker without value ('**') may lie alone or on top (no card covers it yet, so it is still wild, on a
    card above an ace); a covered joker has been fixed and is written with its value ('*7r')."""
    for k in range(1, len(cards)):
        lower, upper = cards[k - 1], cards[k]
        if lower == JOKER:
            raise SnapshotError(
                f"{where}[{k - 1}]: a covered joker has a value ('*7r'), got '**' under {to_text(upper)}"
            )
        if upper == JOKER:
            if card_rank(lower) < 1:
                raise SnapshotError(f"{where}[{k}]: a joker cannot lie on {to_text(lower)}")
            continue
        if card_rank(upper) != card_rank(lower) - 1 or card_colour(upper) == card_colour(lower):
            raise SnapshotError(
                f"{where}: {to_text(upper)} cannot lie on {to_text(lower)} (a work pile is a run down in "
                "alternating colours)"
            )


def restore_table(state: TableState, config: NertzConfig, snap: Any, t: int = 0) -> None:
    """Load a ``nertz-snapshot/1`` dict into table ``t`` of ``state`` (whose config must equal the snapshot's).

    Raises:
        SnapshotError: naming the malformed field; ``state`` is left unchanged in that case.
    """
    fmt = _field(snap, "format", "snapshot")  # refuses a snapshot that is no dict
    if fmt != FORMAT:
        raise SnapshotError(f"snapshot.format must be {FORMAT!r}, got {short(fmt)}")
    try:
        snap_config = make_config(**_field(snap, "config", "snapshot"))
    except (TypeError, ValueError) as e:
        raise SnapshotError(f"snapshot.config: {e}") from None
    if snap_config != config:
        mine, theirs = dataclasses.asdict(config), dataclasses.asdict(snap_config)
        diff = [k for k in mine if mine[k] != theirs[k]]
        details = ", ".join(f"{k}={theirs[k]!r} in the snapshot but {mine[k]!r} here" for k in diff)
        raise SnapshotError(f"snapshot.config differs from this table's config: {details}")
    n_players, w, d = config.num_players, config.work_piles, config.deck_size
    new = allocate(config, 1)  # filled as the fields check out; copied into table t once all have
    new.tick[0] = _int(_field(snap, "tick", "snapshot"), "snapshot.tick", 0, _INT32_MAX)
    new.round_idx[0] = _int(_field(snap, "round", "snapshot"), "snapshot.round", 0, config.max_rounds_resolved - 1)
    new.since_progress[0] = _int(
        _field(snap, "since_progress", "snapshot"), "snapshot.since_progress", 0, _INT32_MAX
    )
    new.stalls[0] = _int(_field(snap, "stalls", "snapshot"), "snapshot.stalls", 0, 1)
    done = _field(snap, "done", "snapshot")
    if not isinstance(done, str) or done not in _DONE_CODES:  # a list or a dict is not hashable
        raise SnapshotError(f"snapshot.done must be one of {sorted(_DONE_CODES)}, got {short(done)}")
    new.done[0] = _DONE_CODES[done]
    players = _field(snap, "players", "snapshot")
    if not isinstance(players, list) or len(players) != n_players:
        raise SnapshotError(f"snapshot.players must list {n_players} players")
    rng = _field(snap, "rng", "snapshot")
    if _field(rng, "algorithm", "snapshot.rng") != RNG_ALGORITHM:
        raise SnapshotError(f"snapshot.rng.algorithm must be {RNG_ALGORITHM!r}")
    try:
        rng_state = int(_field(rng, "state", "snapshot.rng"), 0)
    except (TypeError, ValueError):
        raise SnapshotError("snapshot.rng.state must be a hex string such as '0x1f'") from None
    if not 0 <= rng_state < 2**64:
        raise SnapshotError("snapshot.rng.state must fit in 64 bits")
    new.rng[0] = np.uint64(rng_state)

    owned: list[Counter[int]] = [Counter() for _ in range(n_players)]
    n_actions = action_table(config).n
    for p, pl in enumerate(players):
        where = f"snapshot.players[{p}]"
        nertz = _cards(_field(pl, "nertz", where), f"{where}.nertz", config.nertz_size, True)
        work_raw = _field(pl, "work", where)
        if not isinstance(work_raw, list) or len(work_raw) != w:
            raise SnapshotError(f"{where}.work must list {w} work piles")
        work = []
        for j, pile in enumerate(work_raw):
            cards = _cards(pile, f"{where}.work[{j}]", MAX_PILE, False)
            _check_run(cards, f"{where}.work[{j}]")
            new.work[0, p, j, : len(cards)] = cards
            new.work_len[0, p, j] = len(cards)
            work += cards
        stock = _cards(_field(pl, "stock", where), f"{where}.stock", d, True)
        waste = _cards(_field(pl, "waste", where), f"{where}.waste", d, True)
        new.redeals[0, p] = _int(_field(pl, "redeals", where), f"{where}.redeals", 0, 32767)
        new.false_calls[0, p] = _int(_field(pl, "false_calls", where), f"{where}.false_calls", 0, 32767)
        new.match_score[0, p] = _int(
            pl.get("match_score", 0), f"{where}.match_score", -_INT32_MAX - 1, _INT32_MAX
        )
        moves = pl.get("last_moves", [])
        if (
            not isinstance(moves, list)
            or len(moves) > config.last_moves
            or not all(isinstance(a, int) and not isinstance(a, bool) and 1 <= a < n_actions for a in moves)
        ):
            raise SnapshotError(
                f"{where}.last_moves must list at most last_moves={config.last_moves} action indices from 1 to "
                f"{n_actions - 1}, got {short(moves)}"
            )
        new.last_moves[0, p, : len(moves)] = moves
        memory = pl.get("memory", {"stock": [0] * len(stock), "waste": [0] * len(waste)})
        for k, (name, pile) in enumerate((("stock", stock), ("waste", waste))):
            known = _field(memory, name, f"{where}.memory")
            if (
                not isinstance(known, list)
                or len(known) != len(pile)
                or not all(is_int(m) and MEM_UNSEEN <= m <= MEM_KNOWN for m in known)
            ):
                raise SnapshotError(
                    f"{where}.memory.{name} must list one of 0 (never seen), 1 (seen) or 2 (known) per card of the "
                    f"{name} ({len(pile)}), got {short(known)}"
                )
            if config.memory:
                new.memory[0, p, k, : len(pile)] = known
        for name, cards in (("nertz", nertz), ("stock", stock), ("waste", waste)):
            getattr(new, name)[0, p, : len(cards)] = cards
            getattr(new, f"{name}_len")[0, p] = len(cards)
        for c in nertz + stock + waste + work:
            owned[p][min(c, JOKER)] += 1

    lake_raw = _field(snap, "lake", "snapshot")
    max_f = n_players * (4 + config.jokers)
    if not isinstance(lake_raw, list) or len(lake_raw) > max_f:
        raise SnapshotError(f"snapshot.lake must be a list of at most {max_f} foundations")
    for f, fnd in enumerate(lake_raw):
        where = f"snapshot.lake[{f}]"
        if not isinstance(fnd, list) or not 1 <= len(fnd) <= 13:
            raise SnapshotError(f"{where} must be a list of 1 to 13 [card, seat] pairs")
        for k, pair in enumerate(fnd):
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise SnapshotError(f"{where}[{k}] must be a [card, seat] pair")
            try:
                code = lake_from_text(pair[0])
            except ValueError as e:
                raise SnapshotError(f"{where}[{k}]: {e}") from None
            seat = _int(pair[1], f"{where}[{k}] seat", 0, n_players - 1)
            real = code - LAKE_JOKER_FLAG if code >= LAKE_JOKER_FLAG else code
            if k == 0:
                suit = real // 13
            if real % 13 != k or real // 13 != suit:
                raise SnapshotError(
                    f"{where}[{k}]: {pair[0]} does not continue the foundation (ace first, then up by suit)"
                )
            new.lake[0, f, k] = code
            new.lake_owner[0, f, k] = seat
            new.lake_played[0, seat] += 1
            owned[seat][JOKER if code >= LAKE_JOKER_FLAG else code] += 1
        new.lake_len[0, f] = len(fnd)
        new.lake_tops[0, real] += 1
    new.lake_n[0] = len(lake_raw)

    deck = Counter(range(NUM_CARDS))
    if config.jokers:
        deck[JOKER] = config.jokers
    for p in range(n_players):
        if owned[p] != deck:
            missing = sorted((deck - owned[p]).elements())
            extra = sorted((owned[p] - deck).elements())
            raise SnapshotError(
                f"snapshot.players[{p}]: the deck must hold every card once; missing "
                f"{[to_text(c) for c in missing]}, extra {[to_text(c) for c in extra]}"
            )
    for name, arr in new._asdict().items():
        if name not in PARAMETERS:  # the config's arrays are this table's already
            getattr(state, name)[t] = arr[0]
    observe_table(state, t)
