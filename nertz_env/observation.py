"""The observation vector: one flat float32 vector per seat with named slices, and ``decode`` back.

What each slice holds: docs/env/nertz.md, "Observation space". A card block is 18 values: 13 rank one-hot
(A..K), 4 suit one-hot (C D H S), 1 joker flag; a joker fixed on a work pile sets its rank and 0.5 on both
suits of its colour. Hidden cards never appear (with ``memory``, the seat's own cards it saw before do).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from nertz_env.actions import action_table
from nertz_env.cards import FIXED_JOKER_BASE, JOKER, card, fixed_joker, to_text
from nertz_env.config import NertzConfig

CARD_FEATURES = 18
STATUS_FIELDS = (
    "tick_frac",
    "stall_frac",
    "stalls",
    "my_turn",
    "redeals_left",
    "own_lake_frac",
    "round_frac",
)
# Slots of ObsLayout.offsets, the integers the engine reads.
(
    O_NTOP,
    O_NCOUNT,
    O_WTOP,
    O_SCOUNT,
    O_WCOUNT,
    O_WORK,
    O_WJOKER,
    O_WEXP,
    O_WCNT,
    O_LAKE,
    O_OTOP,
    O_OCOUNT,
    O_OTEAM,
    O_STATUS,
    O_MEM,
    O_LAST,
    O_SIZE,
) = range(17)
#: the ``memory`` option's slices, in order, each one value per own card
MEMORY_SLICES = ("memory_stock", "memory_on_top", "memory_waste", "memory_unseen")


class ObsLayout:
    """Named slices of the observation vector for one config.

    :func:`obs_layout` makes one per config and shares it: ``offsets`` is read-only, ``slices`` is not to be
    changed.
    """

    def __init__(self, config: NertzConfig) -> None:
        self.config = config
        p, w, d = config.num_players, config.work_piles, config.deck_size
        sizes = [
            ("nertz_top", CARD_FEATURES),
            ("nertz_count", 1),
            ("waste_top", CARD_FEATURES),
            ("stock_count", 1),
            ("waste_count", 1),
            ("work_cards", w * 52),
            ("work_joker", w),
            ("work_exposed", w * CARD_FEATURES),
            ("work_count", w),
            ("lake_tops", 52),
            ("opp_nertz_top", (p - 1) * CARD_FEATURES),
            ("opp_nertz_count", p - 1),
            ("opp_teammate", p - 1),
            ("status", len(STATUS_FIELDS)),
        ]
        # an observation option that is off leaves its slices out, not empty
        if config.memory:
            sizes += [(name, d) for name in MEMORY_SLICES]
        if config.last_moves:
            sizes.append(("last_moves", config.last_moves * action_table(config).n))
        self.slices = named_slices(sizes)
        self.size = pos = sum(n for _, n in sizes)
        # one offset per O_* slot, where the slice starts or would start (O_MEM: the memory slices), then the size
        memory = self.slices["status"].stop
        starts = [self.slices[name].start for name, _ in sizes[:O_MEM]]
        self.offsets = np.array([*starts, memory, memory + 4 * d * config.memory, pos], dtype=np.int32)
        self.offsets.flags.writeable = False

    def view(self, obs: np.ndarray, name: str) -> np.ndarray:
        """The named slice of an observation (or of a batch of them, slicing the last axis)."""
        return obs[..., self.slices[name]]


def named_slices(sizes: list[tuple[str, int]]) -> dict[str, slice]:
    """Consecutive slices of one vector, by name, from ``(name, width)`` pairs in order."""
    ends = np.cumsum([0, *(n for _, n in sizes)]).tolist()
    return {name: slice(ends[i], ends[i + 1]) for i, (name, _) in enumerate(sizes)}


@functools.cache
def obs_layout(config: NertzConfig) -> ObsLayout:
    """The observation layout of a config, built once per config and shared."""
    return ObsLayout(config)


def read_card(x: np.ndarray, base: int) -> int:
    """The card code (:mod:`nertz_env.cards`) of the card block at ``x[base:]``, -1 for an empty block. Plain
    Python for :func:`decode`; :mod:`nertz_env.moves` compiles it for the move features and the agents."""
    rank = -1
    for r in range(13):
        if x[base + r] > 0.5:
            rank = r
    if x[base + 17] > 0.5:  # a joker: wild, or fixed with 0.5 on both suits of its colour (D and H: red)
        return JOKER if rank < 0 else FIXED_JOKER_BASE + rank * 2 + (1 if x[base + 14] > 0.25 else 0)
    for u in range(4):
        if rank >= 0 and x[base + 13 + u] > 0.5:
            return u * 13 + rank
    return -1


def _decode_card(v: np.ndarray) -> str | None:
    code = read_card(v, 0)
    return None if code < 0 else to_text(code)


def _decode_pile(cells: np.ndarray, has_joker: bool, count: int) -> list[str]:
    """Cards of one work pile, bottom to top, from its 52-wide multi-hot (highest rank at the bottom)."""
    grid = cells.reshape(4, 13)  # suit, rank
    pile: list[str] = []
    for r in range(12, -1, -1):
        col = grid[:, r]
        full = np.flatnonzero(col > 0.75)
        half = np.flatnonzero((col > 0.25) & (col <= 0.75))
        if full.size:
            pile.append(to_text(card(r, int(full[0]))))
        elif half.size:
            pile.append(to_text(fixed_joker(r, 1 if int(half[0]) in (1, 2) else 0)))
    if has_joker and len(pile) < count:  # a joker with no value lies on top, uncovered (or alone)
        pile.append(to_text(JOKER))
    return pile


def decode(obs: np.ndarray, config: NertzConfig) -> dict[str, Any]:
    """One observation vector (the ``"observation"`` entry) of a table of ``config`` as a readable dict: cards
    as text (None for an empty slot), counts as integers; the fields: docs/env/nertz.md, "Observation space"."""
    layout = obs_layout(config)
    obs = np.asarray(obs, dtype=np.float32)
    if obs.shape != (layout.size,):
        raise ValueError(f"decode takes one observation of shape ({layout.size},), got {obs.shape}")
    s = layout.slices
    p, w = config.num_players, config.work_piles
    deck = config.deck_size
    work_cards = obs[s["work_cards"]].reshape(w, 52)
    work_joker = obs[s["work_joker"]]
    work_count = np.rint(obs[s["work_count"]] * 13).astype(int)
    lake = np.rint(obs[s["lake_tops"]] * (p * (1 + config.jokers))).astype(int)
    opp_top = obs[s["opp_nertz_top"]].reshape(p - 1, CARD_FEATURES)
    opp_count = np.rint(obs[s["opp_nertz_count"]] * config.nertz_size).astype(int)
    opp_team = obs[s["opp_teammate"]]
    stock_count = round(float(obs[s["stock_count"]][0]) * deck)
    waste_count = round(float(obs[s["waste_count"]][0]) * deck)
    most = deck - config.nertz_size - w  # the cards stock and waste hold at most

    def places(name: str, count: int) -> list[str | None]:
        pile: list[str | None] = [None] * count
        values = obs[s[name]]
        for slot in np.flatnonzero(values):
            pile[count - round(float(values[slot]) * most)] = to_text(min(int(slot), JOKER))
        return pile

    memory = {}
    if config.memory:
        unseen = obs[s["memory_unseen"]]
        memory["memory"] = {
            "stock": places("memory_stock", stock_count),
            "waste": places("memory_waste", waste_count),
            "unseen": [to_text(c) for c in range(52) if unseen[c] > 0.5] + ["**"] * int(unseen[52:].sum()),
        }
    piles = [_decode_pile(work_cards[j], bool(work_joker[j] > 0.5), int(work_count[j])) for j in range(w)]
    opponents = [(_decode_card(opp_top[i]), int(opp_count[i]), bool(opp_team[i] > 0.5)) for i in range(p - 1)]
    out: dict[str, Any] = {
        "nertz_top": _decode_card(obs[s["nertz_top"]]),
        "nertz_count": round(float(obs[s["nertz_count"]][0]) * config.nertz_size),
        "waste_top": _decode_card(obs[s["waste_top"]]),
        "stock_count": stock_count,
        "waste_count": waste_count,
        "work": piles,
        "work_exposed": [_decode_card(v) for v in obs[s["work_exposed"]].reshape(w, CARD_FEATURES)],
        "lake_tops": {to_text(c): int(lake[c]) for c in range(52) if lake[c] > 0},
        "opponents": [dict(zip(("nertz_top", "nertz_count", "teammate"), o, strict=True)) for o in opponents],
        "status": dict(zip(STATUS_FIELDS, (float(x) for x in obs[s["status"]]), strict=True)),
    } | memory
    if config.last_moves:
        moves = obs[s["last_moves"]].reshape(config.last_moves, -1)
        out["last_moves"] = [int(np.argmax(m)) for m in moves if m.any()]
    return out
