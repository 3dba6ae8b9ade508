"""The drawing: stable SVG for fixed snapshots (tests/golden/; after a deliberate change run
``python tests/golden/make_golden.py`` and look at its PNGs), a raster showing the cards the SVG places, the
interactive attributes, and rgb_array rendering on every env form."""

from __future__ import annotations

import itertools
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from nertz_env.environment import parallel_env
from nertz_env.render import draw
from nertz_env.render.draw import CH, CW, ENV_FAN, FELT, SEAT_COLOURS, SEAT_INK, table_rgb, table_svg
from nertz_env.vector import vector_env

pytest.importorskip("resvg_py", reason="needs the render extra: pip install '.[render]'")
PIL = pytest.importorskip("PIL.Image", reason="needs the render extra: pip install '.[render]'")

GOLDEN = Path(__file__).resolve().parent / "golden"
CASES = ["p2", "p4_jokers", "p8_w6"]
sys.path.insert(0, str(GOLDEN))
from make_golden import SCALE, svg_hash  # noqa: E402


def _snap(name: str) -> dict:
    return json.loads((GOLDEN / f"snap_{name}.json").read_text())


_USE = re.compile(r'<use href="#(c-[^"]+)" x="([0-9.]+)" y="([0-9.]+)"')


def _placed(svg: str) -> list[tuple[str, float, float]]:
    """Every card drawn: (symbol id, x, y) in drawing order."""
    return [(m.group(1), float(m.group(2)), float(m.group(3))) for m in _USE.finditer(svg)]


@pytest.mark.parametrize("name", CASES)
def test_svg_is_stable(name: str) -> None:
    hashes = json.loads((GOLDEN / "draw_hashes.json").read_text())
    svg = table_svg(_snap(name))
    assert svg_hash(svg) == hashes[name], "the drawing changed: run python tests/golden/make_golden.py and look"
    assert "<text" not in svg  # letters are paths: the picture never depends on installed fonts


@pytest.mark.parametrize("name", CASES)
def test_raster_matches_reference(name: str) -> None:
    snap = _snap(name)
    img = table_rgb(snap, scale=SCALE)
    ref = np.asarray(PIL.open(GOLDEN / f"{name}_half.png").convert("RGB"))
    assert img.shape == ref.shape and img.dtype == np.uint8
    diff = np.abs(img.astype(np.int16) - ref.astype(np.int16))
    assert diff.mean() < 1.5 and (diff.max(axis=2) > 60).mean() < 0.005


def _is_red(code: str) -> bool:
    text = code[2:].replace("x", "*")
    if text.startswith("*"):
        return text[-1] in "rDH"
    return text[1] in "DH"


@pytest.mark.parametrize("name", CASES)
def test_raster_shows_the_cards(name: str) -> None:
    """Where the SVG places a card, the raster (the SVG's size) has a face or back, its corner red or dark."""
    snap = _snap(name)
    svg = table_svg(snap)
    w, h = (int(v) for v in re.search(r'width="(\d+)" height="(\d+)"', svg).groups())
    img = table_rgb(snap).astype(np.int16)
    assert img.shape == (h, w, 3)
    placed = _placed(svg)
    n_cards = sum(len(pl["nertz"][-1:]) + len(pl["waste"][-1:]) + sum(map(len, pl["work"])) for pl in snap["players"])
    n_backs = sum(1 for pl in snap["players"] if pl["stock"])
    assert len(placed) == n_cards + n_backs + len(snap["lake"])
    for sym, x, y in placed:
        xi, yi = round(x), round(y)
        corner = img[yi + 3 : yi + 12, xi + 3 : xi + 22]  # the rank and small suit (visible on fanned cards too)
        if sym == "c-back":
            assert corner[..., 2].mean() > corner[..., 0].mean() + 40  # blue
            continue
        paper = (corner.min(axis=2) > 225).mean()
        red = ((corner[..., 0] > 150) & (corner[..., 1] < 90) & (corner[..., 2] < 110)).mean()
        dark = (corner.max(axis=2) < 90).mean()
        assert paper > 0.25, f"{sym} at {(x, y)}: no card face"
        if _is_red(sym):
            assert red > 0.05 and dark < 0.02, f"{sym} at {(x, y)}: corner not red"
        else:
            assert dark > 0.05 and red < 0.02, f"{sym} at {(x, y)}: corner not dark"
    # a fully visible card (the first seat's Nertz top) has its face below the corner
    sym, x, y = placed[len(snap["lake"])]
    body = img[round(y) + 14 : round(y) + CH - 4, round(x) + 4 : round(x) + CW - 4]
    assert (body.min(axis=2) > 225).mean() > 0.5


def test_interactive_attributes() -> None:
    snap = _snap("p4_jokers")
    svg = table_svg(snap, interactive=True)
    plain = table_svg(snap)
    assert 'class="hit"' not in plain and "data-depth" not in plain
    zones = re.findall(r'class="hit" data-zone="(\w+)"', svg)
    n = len(snap["players"])
    work_cards = sum(len(p) or 1 for pl in snap["players"] for p in pl["work"])  # an empty pile is one target
    max_f = n * (4 + snap["config"]["jokers"])
    assert zones.count("nertz") == n and zones.count("stock") == n and zones.count("waste") == n
    assert zones.count("work") == work_cards
    assert zones.count("lake") == max_f + len(snap["lake"])  # every place, and each foundation's top card on it
    # depths count from the top: a pile of k cards has depths k .. 1, bottom to top
    pile = snap["players"][1]["work"][0]
    depths = re.findall(r'data-zone="work" data-seat="1" data-pile="0" data-depth="(\d+)"', svg)
    assert [int(d) for d in depths] == list(range(len(pile), 0, -1)) or (not pile and depths == ["0"])


def test_highlight_and_names() -> None:
    snap = _snap("p2")
    a = table_svg(snap, seat_names=["me", "search"], highlight={"seats": {1: ("lost race", "warn")}})
    assert a != table_svg(snap) and "#ffb627" in a
    with pytest.raises(ValueError, match="seat_names"):
        table_svg(snap, seat_names=["one"])
    with pytest.raises(ValueError, match="highlight"):
        table_svg(snap, highlight={"colour": 1})
    with pytest.raises(ValueError, match="kind"):
        table_svg(snap, highlight={"seats": {0: ("x", "loud")}})


def test_default_drawing_is_env_render() -> None:
    """table_rgb(env.snapshot()) is env.render()'s very picture, and the default size is one per config."""
    env = parallel_env(num_players=2, render_mode="rgb_array")
    env.reset(seed=4)
    for _ in range(30):
        env.step({a: 2 for a in env.agents})
    assert np.array_equal(env.render(), table_rgb(env.snapshot()))
    snaps = [_snap("p2"), env.snapshot()]
    def size(svg: str) -> str:
        return re.search(r'viewBox="([^"]+)"', svg).group(1)

    assert len({size(table_svg(s)) for s in snaps}) == 1  # same config, same size
    longer = max(ENV_FAN, draw.longest_pile(snaps[0])) + 3
    assert size(table_svg(snaps[0], fan=longer)) != size(table_svg(snaps[0]))
    assert table_rgb(snaps[0], fan=13).shape[0] > table_rgb(snaps[0], fan=6).shape[0]  # a longer fan, a taller table


@pytest.mark.parametrize("players", [2, 5, 8])
def test_rgb_array_env_forms(players: int) -> None:
    """(PettingZoo's render_test, rgb_array included: test_clients.py.)"""
    p = parallel_env(num_players=players, render_mode="rgb_array")
    p.reset(seed=0)
    first = p.render()
    for _ in range(5):
        p.step({a: 1 for a in p.agents})
    frame = p.render()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape == first.shape  # one size per episode
    assert not np.array_equal(frame, first)
    v = vector_env(2, num_players=players, render_mode="rgb_array")
    v.reset(seed=0)
    frames = v.render()  # Gymnasium's convention: one frame per table
    assert isinstance(frames, tuple) and len(frames) == 2 and frames[0].shape == frames[1].shape
    assert not np.array_equal(frames[0], frames[1])  # different deals
    assert np.array_equal(frames[1], table_rgb(v.snapshot(1), fan=ENV_FAN))


def _linear(colour: str) -> list[float]:
    rgb = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    return [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]


def _luminance(colour: str) -> float:
    lin = _linear(colour)
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _lab(colour: str) -> tuple[float, float, float]:
    lin = _linear(colour)
    x = (0.4124 * lin[0] + 0.3576 * lin[1] + 0.1805 * lin[2]) / 0.95047
    y = _luminance(colour)
    z = (0.0193 * lin[0] + 0.1192 * lin[1] + 0.9505 * lin[2]) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def test_seat_colours_are_far_apart_and_headers_read() -> None:
    def delta(a: str, b: str) -> float:
        return sum((p - q) ** 2 for p, q in zip(_lab(a), _lab(b), strict=True)) ** 0.5

    assert len(set(SEAT_COLOURS)) == 8
    # the seats of a 4-player table, the default, are told apart at a glance (CIE76 distance above 45)
    assert min(delta(a, b) for a, b in itertools.combinations(SEAT_COLOURS[:4], 2)) > 45
    assert min(delta(a, b) for a, b in itertools.combinations(SEAT_COLOURS, 2)) > 25
    assert min(delta(c, FELT) for c in SEAT_COLOURS) > 20  # every frame stands out on the felt
    for c, ink in zip(SEAT_COLOURS, SEAT_INK, strict=True):  # header text: WCAG contrast of at least 4.5
        hi, lo = sorted((_luminance(c), _luminance(ink)), reverse=True)
        assert (hi + 0.05) / (lo + 0.05) >= 4.5, c


def test_redeals_say_used(monkeypatch: pytest.MonkeyPatch) -> None:
    said: list[str] = []
    real = draw._text

    def spy(s: str, *args: object, **kw: object) -> str:
        said.append(s)
        return real(s, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(draw, "_text", spy)
    snap = json.loads(json.dumps(_snap("p2")))
    snap["players"][0]["redeals"] = 2
    table_svg(snap)
    assert "REDEALS USED 2" in said
    said.clear()
    snap["config"]["max_redeals"] = 3
    table_svg(snap)
    assert "REDEALS USED 2 OF 3" in said
