"""The one card encoding of nertz-env: integers for the engine, two-letter text for people and snapshots.

Card codes (int8 everywhere in the engine)::

      0 .. 12   AC 2C 3C ... KC      code = suit * 13 + rank
     13 .. 25   AD 2D 3D ... KD      rank: 0 = A, 1 = 2, ..., 9 = T, 10 = J, 11 = Q, 12 = K
     26 .. 38   AH 2H 3H ... KH      suit: 0 = C, 1 = D, 2 = H, 3 = S
     39 .. 51   AS 2S 3S ... KS      colour: D and H are red (1), C and S are black (0)
     52         JOKER               wild, no value yet (Nertz pile, stock, waste, uncovered on a work pile)
     53 .. 78   fixed joker         a joker fixed once covered on a work pile: 53 + rank * 2 + colour
     -1         (none)              an empty slot

In the lake a joker is declared as one real card; lake cells hold ``LAKE_JOKER_FLAG + card`` for such a
joker (64 .. 115) and the plain card code otherwise.

Text: rank and suit, ``"TD"``; jokers ``"**"``, ``"*7r"`` (fixed as a red seven), ``"*7H"`` (declared in the
lake): docs/guides/snapshots.md.
"""

from __future__ import annotations

from nertz_env._text import short

RANKS = "A23456789TJQK"
SUITS = "CDHS"
NUM_RANKS = 13
NUM_CARDS = 52
JOKER = 52
FIXED_JOKER_BASE = 53
FIXED_JOKER_END = FIXED_JOKER_BASE + NUM_RANKS * 2  # exclusive
LAKE_JOKER_FLAG = 64


def card(rank: int, suit: int) -> int:
    """Code of the real card of ``rank`` (0 = A .. 12 = K) and ``suit`` (0 = C, 1 = D, 2 = H, 3 = S)."""
    return suit * NUM_RANKS + rank


def fixed_joker(rank: int, colour: int) -> int:
    """Code of a joker fixed on a work pile as a card of ``rank`` and ``colour`` (1 red, 0 black)."""
    return FIXED_JOKER_BASE + rank * 2 + colour


def to_text(code: int) -> str:
    """Text of a pile card code (see the module docstring). Raises ValueError on an invalid code."""
    code = int(code)
    if 0 <= code < NUM_CARDS:
        return RANKS[code % NUM_RANKS] + SUITS[code // NUM_RANKS]
    if code == JOKER:
        return "**"
    if FIXED_JOKER_BASE <= code < FIXED_JOKER_END:
        r, c = divmod(code - FIXED_JOKER_BASE, 2)
        return "*" + RANKS[r] + ("r" if c else "b")
    raise ValueError(f"not a card code: {code}")


def lake_to_text(code: int) -> str:
    """Text of a lake cell code: a real card, or ``"*" + card`` for a declared joker."""
    code = int(code)
    if code >= LAKE_JOKER_FLAG:
        return "*" + to_text(code - LAKE_JOKER_FLAG)
    return to_text(code)


def from_text(text: str) -> int:
    """Pile card code of a text such as ``"TD"``, ``"**"`` or ``"*7r"``. Raises ValueError naming the text."""
    if not isinstance(text, str):
        raise ValueError(f"a card is a text such as 'TD', got {short(text)}")
    t = text.strip()
    if t == "**":
        return JOKER
    if len(t) == 3 and t[0] == "*" and t[1] in RANKS and t[2] in "rb":
        return fixed_joker(RANKS.index(t[1]), 1 if t[2] == "r" else 0)
    if len(t) == 2 and t[0] in RANKS and t[1] in SUITS:
        return card(RANKS.index(t[0]), SUITS.index(t[1]))
    raise ValueError(
        f"not a card: {short(text)} (rank A23456789TJQK + suit CDHS such as 'TD', or a joker '**', '*7r', '*7b')"
    )


def lake_from_text(text: str) -> int:
    """Lake cell code of ``"TD"`` (a real card) or ``"*TD"`` (a joker declared as the ten of diamonds)."""
    if isinstance(text, str) and len(text) == 3 and text[0] == "*" and text[2] in SUITS:
        return LAKE_JOKER_FLAG + from_text(text[1:])
    code = from_text(text)
    if code >= NUM_CARDS:
        raise ValueError(f"a lake card is a real card or a declared joker such as '*7H', got {short(text)}")
    return code
