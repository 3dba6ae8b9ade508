"""The one drawing of a Nertz table: a snapshot as SVG (:func:`table_svg`), rasterized with resvg by
:func:`table_rgb` (``env.render()``'s picture); letters and suits are SVG paths (the stroke font below).
What it shows, ``interactive`` and ``highlight``: docs/guides/replays.md ("A picture of any table").
"""

from __future__ import annotations

import functools
import io
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nertz_env.extras import install_command

#: One colour per seat: Okabe & Ito's colour-blind-safe set, with grey for its black.
SEAT_COLOURS = ("#d55e00", "#56b4e9", "#f0e442", "#cc79a7", "#009e73", "#e69f00", "#0072b2", "#bbbbbb")

#: The text colour on each seat's colour (its panel header): white or near-black, whichever has the higher
#: WCAG contrast on it.
SEAT_INK = ("#111111", "#111111", "#111111", "#111111", "#111111", "#111111", "#ffffff", "#111111")

# Card and layout sizes, in SVG units (one unit is one pixel of the raster at scale 1).
CW, CH = 40, 56  # a card
GAP = 6  # between piles
FAN = 15  # vertical step of a fanned work pile
ENV_FAN = 9  # the default room (env.render() and table_svg/table_rgb): one size per config (longer piles squeeze)
PAD = 8
HEAD = 24  # a seat panel's header
TITLE = 28  # the table's title bar
LAKE_CELL = 3  # width of one owner cell under a lake card

FELT = "#24593a"
PANEL = "#1b4630"
INK = "#1d1d1f"
RED = "#c8102e"
JOKER_INK = "#6a2c91"
KIND_COLOURS = {"info": "#f5f5f5", "warn": "#ffb627", "error": "#ff4d4d"}

# ---------------------------------------------------------------------------------------------------------
# A stroke font: each glyph is polylines on a 4 x 6 grid (y down, 6 the baseline), drawn as one SVG path.
_GLYPHS: dict[str, str] = {
    "A": "0,6 2,0 4,6|0.7,3.9 3.3,3.9",
    "B": "0,6 0,0 3,0 4,1 4,2 3,3 0,3|3,3 4,4 4,5 3,6 0,6",
    "C": "4,1 3,0 1,0 0,1 0,5 1,6 3,6 4,5",
    "D": "0,0 0,6 2.5,6 4,4.5 4,1.5 2.5,0 0,0",
    "E": "4,0 0,0 0,6 4,6|0,3 3,3",
    "F": "4,0 0,0 0,6|0,3 3,3",
    "G": "4,1 3,0 1,0 0,1 0,5 1,6 3,6 4,5 4,3.5 2.5,3.5",
    "H": "0,0 0,6|4,0 4,6|0,3 4,3",
    "I": "1,0 3,0|2,0 2,6|1,6 3,6",
    "J": "4,0 4,5 3,6 1,6 0,5",
    "K": "0,0 0,6|4,0 0,4|1.4,2.6 4,6",
    "L": "0,0 0,6 4,6",
    "M": "0,6 0,0 2,3.5 4,0 4,6",
    "N": "0,6 0,0 4,6 4,0",
    "O": "1,0 3,0 4,1 4,5 3,6 1,6 0,5 0,1 1,0",
    "P": "0,6 0,0 3,0 4,1 4,2 3,3 0,3",
    "Q": "1,0 3,0 4,1 4,5 3,6 1,6 0,5 0,1 1,0|2.5,4.5 4,6.3",
    "R": "0,6 0,0 3,0 4,1 4,2 3,3 0,3|2,3 4,6",
    "S": "4,1 3,0 1,0 0,1 0,2 1,3 3,3 4,4 4,5 3,6 1,6 0,5",
    "T": "0,0 4,0|2,0 2,6",
    "U": "0,0 0,5 1,6 3,6 4,5 4,0",
    "V": "0,0 2,6 4,0",
    "W": "0,0 1,6 2,2.5 3,6 4,0",
    "X": "0,0 4,6|4,0 0,6",
    "Y": "0,0 2,3 4,0|2,3 2,6",
    "Z": "0,0 4,0 0,6 4,6",
    "0": "1,0 3,0 4,1 4,5 3,6 1,6 0,5 0,1 1,0",
    "1": "1,1 2,0 2,6|1,6 3,6",
    "2": "0,1 1,0 3,0 4,1 4,2 0,6 4,6",
    "3": "0,1 1,0 3,0 4,1 4,2 3,3 1.5,3|3,3 4,4 4,5 3,6 1,6 0,5",
    "4": "3,6 3,0 0,4 4,4",
    "5": "4,0 0,0 0,3 3,3 4,4 4,5 3,6 1,6 0,5",
    "6": "4,1 3,0 1,0 0,1 0,5 1,6 3,6 4,5 4,4 3,3 0,3",
    "7": "0,0 4,0 1.5,6",
    "8": "1,0 3,0 4,1 4,2 3,3 1,3 0,4 0,5 1,6 3,6 4,5 4,4 3,3|1,3 0,2 0,1 1,0",
    "9": "4,3 1,3 0,2 0,1 1,0 3,0 4,1 4,5 3,6 1,6 0,5",
    "-": "1,3 3,3",
    "+": "0.5,3 3.5,3|2,1.5 2,4.5",
    "=": "0.5,2.2 3.5,2.2|0.5,3.8 3.5,3.8",
    ":": "2,1.8 2,1.9|2,5.1 2,5.2",
    ".": "2,5.9 2,6",
    ",": "2,5.4 1.4,7",
    "/": "0,6.3 4,-0.3",
    "(": "3,-0.3 1.6,1.5 1.6,4.5 3,6.3",
    ")": "1,-0.3 2.4,1.5 2.4,4.5 1,6.3",
    "[": "3,-0.3 1.5,-0.3 1.5,6.3 3,6.3",
    "]": "1,-0.3 2.5,-0.3 2.5,6.3 1,6.3",
    "_": "0,6.6 4,6.6",
    "#": "1,1 1,5|3,1 3,5|0,2.3 4,2.3|0,3.7 4,3.7",
    "*": "2,1 2,5|0.3,2 3.7,4|0.3,4 3.7,2",
    "!": "2,0 2,4|2,5.9 2,6",
    "?": "0,1 1,0 3,0 4,1 4,2 2,3.5 2,4.3|2,5.9 2,6",
    "'": "2,0 2,1.6",
    '"': "1.2,0 1.2,1.6|2.8,0 2.8,1.6",
    ">": "0.5,1 3.5,3 0.5,5",
    "<": "3.5,1 0.5,3 3.5,5",
    "%": "0,6 4,0|0.6,0.6 0.7,0.6|3.3,5.4 3.4,5.4",
    "&": "4,6 1,2 1,1 2,0 3,1 3,2 0,4.5 0,5.2 1,6 2.5,6 4,4",
    " ": "",
}
_NARROW = {":": 3.0, ".": 3.0, ",": 3.0, "!": 3.0, "'": 3.0, " ": 3.5, "1": 4.5, "I": 4.5, "(": 4.0, ")": 4.0}
_ADVANCE = 5.0

_STROKES = {  # each glyph's polylines as lists of (x, y)
    ch: [[tuple(map(float, pt.split(","))) for pt in line.split()] for line in spec.split("|") if line]
    for ch, spec in _GLYPHS.items()
}


def _num(v: float) -> str:
    """A coordinate, short: at most one decimal, no trailing zeros."""
    return f"{round(v, 1) + 0.0:g}"  # + 0.0: -0.0 is written 0


def text_width(s: str, size: float) -> float:
    """Width of ``s`` drawn with cap height ``size``."""
    k = size / 6.0
    return sum(_NARROW.get(c, _ADVANCE) for c in s.upper()) * k - (k if s else 0.0)


def _text(s: str, x: float, y: float, size: float, colour: str, anchor: str = "start", weight: float = 0.16) -> str:
    """``s`` as one stroked path, cap height ``size``, top-left at (x, y) (``anchor``: start, middle, end)."""
    s = s.upper()
    if anchor != "start":
        w = text_width(s, size)
        x -= w / 2 if anchor == "middle" else w
    k = size / 6.0
    d: list[str] = []
    cx = x
    for ch in s:
        adv = _NARROW.get(ch, _ADVANCE)
        shift = (adv - _ADVANCE) / 2  # a narrow glyph keeps its place in the middle of its advance
        for line in _STROKES.get(ch, _STROKES["?"]):
            pts = [f"{_num(cx + (px + shift) * k)},{_num(y + py * k)}" for px, py in line]
            d.append("M" + pts[0] + "L" + " ".join(pts[1:]))  # every polyline has two points at least
        cx += adv * k
    if not d:
        return ""
    return (
        f'<path d="{"".join(d)}" fill="none" stroke="{colour}" stroke-width="{_num(max(size * weight, 0.8))}" '
        'stroke-linecap="round" stroke-linejoin="round"/>'
    )


# ---------------------------------------------------------------------------------------------------------
# Suits as filled paths in a 10 x 10 box.
_SUIT_PATHS = {
    "H": "M5,9.4C5,9.4 0.3,6 0.3,3.1C0.3,1.4 1.6,0.4 2.9,0.4C3.9,0.4 4.6,1 5,1.9C5.4,1 6.1,0.4 7.1,0.4"
    "C8.4,0.4 9.7,1.4 9.7,3.1C9.7,6 5,9.4 5,9.4Z",
    "D": "M5,0.2L8.6,5L5,9.8L1.4,5Z",
    "S": "M5,0.3C5,0.3 0.4,3.6 0.4,6.2C0.4,7.7 1.5,8.6 2.7,8.6C3.6,8.6 4.3,8.1 4.7,7.4L4.1,9.8L5.9,9.8"
    "L5.3,7.4C5.7,8.1 6.4,8.6 7.3,8.6C8.5,8.6 9.6,7.7 9.6,6.2C9.6,3.6 5,0.3 5,0.3Z",
    "C": "M2.7,2.8a2.3,2.3 0 1,0 4.6,0a2.3,2.3 0 1,0 -4.6,0Z"
    "M0.3,6.2a2.3,2.3 0 1,0 4.6,0a2.3,2.3 0 1,0 -4.6,0Z"
    "M5.1,6.2a2.3,2.3 0 1,0 4.6,0a2.3,2.3 0 1,0 -4.6,0Z"
    "M4.4,5.5L3.7,9.8L6.3,9.8L5.6,5.5Z",
    "*": "M5,0.3L6.2,3.6L9.7,3.6L6.9,5.8L7.9,9.3L5,7.2L2.1,9.3L3.1,5.8L0.3,3.6L3.8,3.6Z",
}


def _suit(s: str, x: float, y: float, size: float, colour: str) -> str:
    k = size / 10.0
    return f'<path transform="translate({_num(x)},{_num(y)}) scale({k:g})" d="{_SUIT_PATHS[s]}" fill="{colour}"/>'


def card_id(text: str) -> str:
    """The ``<symbol>`` id of a card text (``"QH"`` -> ``"c-QH"``, ``"**"`` -> ``"c-xx"``)."""
    return "c-" + text.replace("*", "x")


@functools.cache
def card_symbol(text: str) -> str:
    """The ``<symbol>`` drawing the card ``text`` (a text of :mod:`nertz_env.cards`; ``"back"`` its back)."""
    if text == "back":
        return _BACK
    joker = text.startswith("*")
    # a card "QH"; a joker "**", fixed on a work pile "*7r" / "*7b", or declared in the lake "*7H"
    rank, tail = text[joker:][0].strip("*"), text[joker:][1:]  # "*7r": "7", "r"; "**": "", ""
    suit = tail if tail in ("C", "D", "H", "S") else "*"
    colour = INK if tail in ("b", "C", "S") else RED if tail in ("r", "D", "H") else JOKER_INK
    suit_colour = colour if suit != "*" else JOKER_INK
    corner = "10" if rank == "T" else rank or "JK"  # a joker's corner: JK
    parts = [
        f'<g id="{card_id(text)}">',
        f'<rect x="0.5" y="0.5" width="{CW - 1}" height="{CH - 1}" rx="4" fill="{"#f6efff" if joker else "#fdfdf8"}" '
        f'stroke="{JOKER_INK if joker else "#8a8a80"}" stroke-width="1"/>',
        _text(corner, 3, 3, 9, colour, weight=0.2),
        _suit(suit, 3 + text_width(corner, 9) + 2.5, 2.5, 10, suit_colour),
    ]
    # the middle: a large suit (a star for a joker), or a large letter for a court card
    if rank in "JQK" and rank:
        parts.append(_text(rank, CW / 2, 22, 20, colour, anchor="middle", weight=0.12))
        parts.append(_suit(suit, CW / 2 - 5, 44, 10, suit_colour))
    else:
        parts.append(_suit(suit, CW / 2 - 10, 24, 20, suit_colour))
    if joker and text != "**":
        parts.append(_suit("*", CW - 12, CH - 12, 9, JOKER_INK))
    parts.append("</g>")
    return "".join(parts)


_BACK = (
    '<g id="c-back">'
    f'<rect x="0.5" y="0.5" width="{CW - 1}" height="{CH - 1}" rx="4" fill="#2b4c9b" stroke="#f0f0f0" stroke-width="1"/>'
    f'<rect x="4" y="4" width="{CW - 8}" height="{CH - 8}" rx="2" fill="none" stroke="#9db4ea" stroke-width="1.2"/>'
    f'<path d="M{CW / 2},10L{CW - 9},{CH / 2}L{CW / 2},{CH - 10}L9,{CH / 2}Z" fill="#9db4ea"/>'
    "</g>"
)

# ---------------------------------------------------------------------------------------------------------
@dataclass
class TableDrawing:
    """A drawing in parts: ``head`` (the ``<svg>`` tag), ``body`` (title, lake, seats, in order), the card
    texts used (``"back"`` too; their symbols go in ``<defs>``) and the size. The replay page stores each
    distinct part once."""

    width: int
    height: int
    head: str
    body: list[str]
    cards: set[str]

    def defs(self) -> str:
        return "<defs>" + "".join(card_symbol(c) for c in sorted(self.cards)) + "</defs>"

    def svg(self) -> str:
        return self.head + self.defs() + "".join(self.body) + "</svg>"


def _layout(cfg: Mapping[str, Any], fan: int) -> tuple[int, int, int, int]:
    """(columns, panel width, panel height, fan area height) of a config whose work piles have room for ``fan``
    cards at the full step."""
    n, w = int(cfg["num_players"]), int(cfg["work_piles"])
    cols = {2: 2, 3: 3, 4: 2, 5: 3, 6: 3, 7: 4, 8: 4}.get(n, 4)
    panel_w = PAD + 3 * (CW + GAP) + 8 + w * (CW + GAP) - GAP + PAD
    fan_h = CH + FAN * (fan - 1)
    panel_h = HEAD + max(fan_h, CH + 44) + PAD
    return cols, panel_w, panel_h, fan_h


def longest_pile(snap: Mapping[str, Any]) -> int:
    """The most cards on any work pile of ``snap``."""
    return max((len(pile) for pl in snap["players"] for pile in pl["work"]), default=0)


def _attrs(interactive: bool, zone: str, seat: int | None = None, pile: int | None = None, depth: int | None = None) -> str:
    if not interactive:
        return ""
    data = {"zone": zone, "seat": seat, "pile": pile, "depth": depth}
    return ' class="hit"' + "".join(f' data-{k}="{v}"' for k, v in data.items() if v is not None)


def _select_rect(x: float, y: float, w: float, h: float) -> str:
    return (
        f'<rect x="{_num(x - 2)}" y="{_num(y - 2)}" width="{_num(w + 4)}" height="{_num(h + 4)}" rx="5" '
        'fill="none" stroke="#ffe14d" stroke-width="3"/>'
    )


def _slot(x: float, y: float, label: str, attrs: str) -> str:
    """An empty place: a dashed outline with a small label."""
    out = (
        f'<rect x="{_num(x + 0.5)}" y="{_num(y + 0.5)}" width="{CW - 1}" height="{CH - 1}" rx="4" '
        f'fill="#fff" fill-opacity="0.06" stroke="#9fc7ad" stroke-width="1" stroke-dasharray="3 3"{attrs}/>'
    )
    return out + _text(label, x + CW / 2, y + CH / 2 - 2.5, 5, "#9fc7ad", anchor="middle", weight=0.18)


def _use(card: str, x: float, y: float, attrs: str = "") -> str:
    return f'<use href="#{card_id(card)}" x="{_num(x)}" y="{_num(y)}"{attrs}/>'


def _seat_panel(
    p: int,
    pl: Mapping[str, Any],
    cfg: Mapping[str, Any],
    x0: float,
    y0: float,
    name: str,
    cards: set[str],
    interactive: bool,
    banner: tuple[str, str] | None,
    select: Mapping[str, Any] | None,
    fan: int,
) -> tuple[str, str]:
    """Seat ``p``'s panel as two strings: what stays the same all game (frame, name, labels) and the rest."""
    _cols, panel_w, panel_h, fan_h = _layout(cfg, fan)
    colour = SEAT_COLOURS[p % len(SEAT_COLOURS)]
    ink = SEAT_INK[p % len(SEAT_INK)]
    static = [
        f'<g class="seat" data-seat="{p}">',
        f'<rect x="{_num(x0)}" y="{_num(y0)}" width="{panel_w}" height="{panel_h}" rx="6" fill="{PANEL}" '
        f'stroke="{colour}" stroke-width="2"/>',
        f'<rect x="{_num(x0)}" y="{_num(y0)}" width="{panel_w}" height="{HEAD - 4}" rx="6" fill="{colour}"/>',
        _text(name[:24], x0 + PAD, y0 + 5, 9, ink, weight=0.17),
        _text("SCORE", x0 + panel_w - PAD - 34, y0 + 5, 9, ink, anchor="end", weight=0.17),
    ]
    out = [_text(str(pl["match_score"]), x0 + panel_w - PAD - 29, y0 + 5, 9, ink, weight=0.17)]
    sel_zone = select.get("zone") if select and select.get("seat") == p else None
    y = y0 + HEAD + 4
    label_y = y + CH + 6

    def small_label(text: str, count: int, x: float) -> None:
        static.append(_text(text, x + CW / 2, label_y, 5, "#cfe3d5", anchor="middle", weight=0.18))
        out.append(_text(str(count), x + CW / 2, label_y + 9, 9, "#ffffff", anchor="middle", weight=0.18))

    # the Nertz pile (its top card), the stock (a back) and the waste (its top card), each with its count
    x = x0 + PAD
    for zone, label, empty in (("nertz", "NERTZ", "OUT"), ("stock", "STOCK", ""), ("waste", "WASTE", "")):
        pile = pl[zone]
        if pile:
            top = "back" if zone == "stock" else pile[-1]
            cards.add(top)
            out.append(_use(top, x, y, _attrs(interactive, zone, p)))
        else:
            out.append(_slot(x, y, empty, _attrs(interactive, zone, p)))
        small_label(label, len(pile), x)
        if sel_zone == zone:
            out.append(_select_rect(x, y, CW, CH))
        x += CW + GAP
    redeals, false_calls = int(pl.get("redeals", 0)), int(pl.get("false_calls", 0))
    extra = []
    if redeals:
        limit = cfg.get("max_redeals")
        extra.append(f"REDEALS USED {redeals}" + (f" OF {limit}" if limit is not None else ""))
    if false_calls:
        extra.append(f"FALSE CALLS {false_calls}")
    out.append(_text("  ".join(extra), x0 + PAD, label_y + 24, 5, "#cfe3d5", weight=0.18))  # "" for none
    # work piles, fanned downward
    wx = x + 8  # the work piles, right of the waste
    for j, pile in enumerate(pl["work"]):
        px = wx + j * (CW + GAP)
        out.append(f'<g class="pile" data-zone="work" data-pile="{j}">')
        if not pile:
            out.append(_slot(px, y, "", _attrs(interactive, "work", p, j, 0)))
        n = len(pile)
        step = FAN if n <= fan else (fan_h - CH) / (n - 1)
        for k, c in enumerate(pile):
            cards.add(c)
            out.append(_use(c, px, y + k * step, _attrs(interactive, "work", p, j, n - k)))
        if sel_zone == "work" and select is not None and select.get("pile") == j:  # the run from depth d up
            top_k = max(0, n - int(select.get("depth", 1) or 1))
            out.append(_select_rect(px, y + top_k * step, CW, max(0, n - 1 - top_k) * step + CH))
        out.append("</g>")
    if banner:
        text, kind = banner
        bw = min(panel_w - 2 * PAD, text_width(text, 8) + 16)
        bx, by = x0 + (panel_w - bw) / 2, y0 + panel_h - 22
        out.append(
            f'<rect x="{_num(bx)}" y="{_num(by)}" width="{_num(bw)}" height="16" rx="8" fill="#000" fill-opacity="0.78" '
            f'stroke="{KIND_COLOURS[kind]}" stroke-width="1.5"/>'
        )
        out.append(_text(text, x0 + panel_w / 2, by + 4, 8, KIND_COLOURS[kind], anchor="middle"))
    out.append("</g>")
    return "".join(static), "".join(out)


def _banner(v: Any) -> tuple[str, str]:
    if isinstance(v, str):
        return v, "info"
    text, kind = v
    if kind not in KIND_COLOURS:
        raise ValueError(f"highlight kind must be one of {sorted(KIND_COLOURS)}, got {kind!r}")
    return str(text), str(kind)


def banners_of(lost: Iterable[int], illegal: Iterable[int],
               texts: tuple[str, str]) -> dict[int, tuple[str, str]]:
    """A tick's ``highlight["seats"]``: ``texts[0]`` on the seats that lost a race, ``texts[1]`` over it on
    those whose action was illegal."""
    return {**dict.fromkeys(lost, (texts[0], "warn")), **dict.fromkeys(illegal, (texts[1], "error"))}


def draw_table(
    snap: Mapping[str, Any],
    *,
    seat_names: Sequence[str] | None = None,
    highlight: Mapping[str, Any] | None = None,
    interactive: bool = False,
    fan: int | None = None,
) -> TableDrawing:
    """The drawing of ``snap`` in parts (see :class:`TableDrawing`; :func:`table_svg` joins them)."""
    cfg = snap["config"]
    players = snap["players"]
    n = len(players)
    if seat_names is not None and len(seat_names) != n:
        raise ValueError(f"seat_names must name all {n} seats, got {len(seat_names)}")
    names = list(seat_names) if seat_names is not None else [f"player_{p}" for p in range(n)]
    hl = dict(highlight or {})
    unknown = sorted(set(hl) - {"seats", "select"})
    if unknown:
        raise ValueError(f"unknown highlight key(s) {unknown}; the keys are 'seats' and 'select'")
    banners = {int(p): _banner(v) for p, v in dict(hl.get("seats") or {}).items()}
    select = hl.get("select")
    fan = ENV_FAN if fan is None else max(1, int(fan))
    cols, panel_w, panel_h, _fan_h = _layout(cfg, fan)
    rows = math.ceil(n / cols)
    width = cols * panel_w + (cols + 1) * PAD
    # the lake: every foundation there can be (4 per deck plus its jokers), in rows
    max_f = n * (4 + int(cfg.get("jokers", 0)))
    slot_w = CW + GAP
    per_row = max(1, (width - 2 * PAD + GAP) // slot_w)
    lake_rows = math.ceil(max_f / per_row)
    per_row = math.ceil(max_f / lake_rows)  # balanced rows
    slot_h = CH + 12
    lake_h = lake_rows * slot_h + 14
    lake_y = TITLE
    seats_y = lake_y + lake_h + PAD
    height = seats_y + rows * (panel_h + PAD)
    cards: set[str] = set()
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'data-tick="{snap["tick"]}" data-round="{snap["round"]}" data-done="{snap["done"]}">'
    )
    body: list[str] = [f'<rect width="{width}" height="{height}" fill="{FELT}"/>']
    # title bar: what changes every tick is a part of its own (the replay page stores the rest once)
    state = {"running": "", "terminated": "GAME OVER", "truncated": "STOPPED (TICK LIMIT)"}.get(snap["done"], "")
    title = f"NERTZ   ROUND {snap['round'] + 1}   TICK "
    t = ['<g class="title">', _text(title, PAD, 9, 11, "#ffffff", weight=0.16)]
    if state:
        t.append(_text(state, width - PAD, 9, 11, "#ffe14d", anchor="end", weight=0.16))
    else:
        t.append(_text("NO PROGRESS", width - PAD - 24, 11, 7, "#cfe3d5", anchor="end", weight=0.17))
    body.append("".join(t))
    t = [_text(str(snap["tick"]), PAD + text_width(title, 11), 9, 11, "#ffffff", weight=0.16)]
    if not state:
        t.append(_text(str(snap["since_progress"]), width - PAD - 20, 11, 7, "#cfe3d5", weight=0.17))
    body.append("".join(t) + "</g>")
    # the lake: its places (one part), then the foundations on them (another)
    lake = snap["lake"]
    lk = [
        '<g class="lake">',
        f'<rect x="{PAD / 2}" y="{lake_y}" width="{width - PAD}" height="{lake_h}" rx="8" fill="#1e4d33" '
        'stroke="#3f7a57" stroke-width="1"/>',
    ]
    places = [(PAD + f % per_row * slot_w, lake_y + 6 + f // per_row * slot_h) for f in range(max_f)]
    lk += [_slot(x, y, "LAKE" if f == 0 else "", _attrs(interactive, "lake", None, f))
           for f, (x, y) in enumerate(places)]
    body.append("".join(lk))
    lk = []
    for f, fnd in enumerate(lake):
        x, y = places[f]
        top, owner = fnd[-1][0], int(fnd[-1][1])
        cards.add(top)
        col = SEAT_COLOURS[owner % len(SEAT_COLOURS)]
        lk.append(f'<rect x="{_num(x - 1.5)}" y="{_num(y - 1.5)}" width="{CW + 3}" height="{CH + 3}" rx="5" fill="{col}"/>')
        lk.append(_use(top, x, y, _attrs(interactive, "lake", None, f)))
        for k, (_card, seat) in enumerate(fnd):
            lk.append(
                f'<rect x="{_num(x + 0.5 + k * LAKE_CELL)}" y="{_num(y + CH + 3)}" width="{LAKE_CELL - 0.5}" '
                f'height="5" fill="{SEAT_COLOURS[int(seat) % len(SEAT_COLOURS)]}"/>'
            )
    if select is not None and select.get("zone") == "lake" and 0 <= int(select.get("pile", -1)) < max_f:
        lk.append(_select_rect(*places[int(select["pile"])], CW, CH))
    lk.append("</g>")
    body.append("".join(lk))
    for p, pl in enumerate(players):
        r, c = divmod(p, cols)
        x0 = PAD + c * (panel_w + PAD)
        y0 = seats_y + r * (panel_h + PAD)
        static, panel = _seat_panel(p, pl, cfg, x0, y0, names[p], cards, interactive, banners.get(p), select, fan)
        body += [static, panel]
    return TableDrawing(width, height, head, body, cards)


def table_svg(snap: Mapping[str, Any], **options: Any) -> str:
    """The table of ``snap`` (``env.snapshot()``) as one SVG document; ``options``: :func:`draw_table`'s
    (``seat_names``, default ``player_0``...; ``fan``, cards each work pile has room for, default ``ENV_FAN``
    as ``env.render()``, longer piles squeeze; ``interactive`` and ``highlight``: docs/guides/replays.md)."""
    return draw_table(snap, **options).svg()


def rgb_extra_message() -> str:
    """Why ``render_mode="rgb_array"`` is refused without the render extra, and the command that installs it."""
    return f"rgb_array rendering needs the render extra (resvg-py and pillow): {install_command('render')}"


def svg_to_rgb(svg: str, scale: float = 1.0) -> np.ndarray:
    """Rasterize an SVG with resvg into an (H, W, 3) uint8 array (needs the render extra)."""
    try:
        import resvg_py
        from PIL import Image
    except ImportError as e:  # pragma: no cover - depends on the installed extras
        raise ImportError(rgb_extra_message()) from e
    png = resvg_py.svg_to_bytes(svg_string=svg, skip_system_fonts=True, zoom=scale if scale != 1.0 else None)
    with Image.open(io.BytesIO(bytes(png))) as im:
        return np.asarray(im.convert("RGB"))


def table_rgb(snap: Mapping[str, Any], *, scale: float = 1.0, **options: Any) -> np.ndarray:
    """The drawing of :func:`table_svg`, rasterized: an (H, W, 3) uint8 array (``scale`` multiplies the size).
    With the default ``fan`` (``ENV_FAN``) this is exactly ``env.render()``'s picture of ``snap``."""
    return svg_to_rgb(table_svg(snap, **options), scale)
