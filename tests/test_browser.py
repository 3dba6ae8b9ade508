"""The pages in Debian's chromium driven by Playwright (``pytest -m browser``): nertz-play clicked as a
person plays, the served table checked against ``parallel_env`` after every tick; nertz-replay's page opened
from disk, scrubbed, and the table it draws compared with the file."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import test_replay
from conftest import loopback_http, watched_page
from nertz_env.environment import parallel_env
from nertz_env.replay import RecordReplay, load_replay
from nertz_env.replay.cli import main as replay_main
from test_replay import play

pytestmark = pytest.mark.browser
sync_api = pytest.importorskip("playwright.sync_api", reason="needs the browser extra: pip install '.[browser]'")
SEED = 11  # two flips (a key, then a click on the stock) before three moves
match_game, match_page = test_replay.match_game, test_replay.match_page  # test_replay's recorded match and its page


def open_table(browser: Any, url: str) -> Any:
    """A new tab on the play page at ``url``, once its table is drawn."""
    page = browser.new_page(viewport={"width": 1200, "height": 800})
    page.goto(url)
    page.wait_for_selector("#table svg .hit")
    return page


@contextlib.contextmanager
def serving(tmp_path: Path, specs: list[str], step: bool = True, tick_ms: int = 1000,
            token: str | None = None, **rules: Any) -> Iterator[Any]:
    """A nertz-play table (the person at seat 0, ``specs`` at the others) served on a free loopback port."""
    pytest.importorskip("uvicorn", reason="needs the play extra: pip install '.[play]'")
    from nertz_env.play.server import TableServer
    from test_play import Served, make_game

    game = make_game(players=len(specs) + 1, seed=SEED, bots=specs, replay_dir=tmp_path, **rules)
    served = Served(TableServer(game, step=step, tick_ms=tick_ms, log=lambda text: None), token=token)
    try:
        yield served
    finally:
        served.stop()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Any]:
    with serving(tmp_path, ["heuristic", "greedy"]) as s:
        yield s


def assert_screenshot_shows_cards(page: Any, tmp_path: Path, name: str, **options: Any) -> None:
    """A screenshot of ``page`` (kept in $NERTZ_PLAY_SHOTS when set) shows cards, not a blank page."""
    from PIL import Image

    path = Path(os.environ.get("NERTZ_PLAY_SHOTS") or tmp_path) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), **options)
    with Image.open(path) as im:
        px = np.asarray(im.convert("RGB")).astype(np.int32)
    assert px.shape[0] > 300 and px.shape[1] > 600
    assert px.std() > 25, "the screenshot is (nearly) one colour"
    q = px // 8  # a colour as one integer: np.unique over rows (axis=0) took seconds
    colours = len(np.unique((q[..., 0] << 10) | (q[..., 1] << 5) | q[..., 2]))
    assert colours > 40, f"only {colours} colours: no cards drawn?"
    white = ((px > 235).all(axis=2)).mean()
    assert white > 0.008, f"card faces cover only {white:.1%} of the page"


def tick_of(page: Any) -> int:
    return int(page.get_attribute("#table svg", "data-tick"))


def wait_tick(page: Any, tick: int) -> None:
    """Until the drawing shows ``tick`` or later (step mode never goes past it; the clock may)."""
    page.wait_for_function(
        f"() => document.querySelector('#table svg') && Number(document.querySelector('#table svg').dataset.tick) >= {tick}"
    )


def src_selector(src: dict[str, Any]) -> str:
    base = f'#table .hit[data-zone="{src["zone"]}"][data-seat="0"]'
    if src["zone"] == "work":
        base += f'[data-pile="{src["pile"]}"][data-depth="{src["count"]}"]'
    return base


def dst_selector(dst: dict[str, Any]) -> str:
    if dst["zone"] == "lake":  # any place of the lake: the engine picks the foundation
        return '#table .hit[data-zone="lake"][data-pile="0"]'
    return f'#table .hit[data-zone="work"][data-seat="0"][data-pile="{dst["pile"]}"]'


def top_of(page: Any, selector: str) -> Any:
    """The element of ``selector`` that is drawn last (the exposed card of a pile, a lake place's top card)."""
    return page.locator(selector).last


def check_engine(served: Any, ref: Any) -> None:
    """The served table equals ``ref`` stepped with every action the served table played."""
    game = served.table.game
    while ref.tick < game.env.tick:
        moves = game.history[ref.tick].moves
        ref.step({f"player_{m.seat}": m.submitted for m in moves})
    assert game.env.snapshot() == ref.snapshot()


def test_play_by_clicking__the_table_changes_exactly_as_the_engine_says(browser: Any, served: Any,
                                                                         tmp_path: Path) -> None:
    page, errors = watched_page(browser, 1400, 900)
    page.goto(served.page)
    page.wait_for_selector("#table svg .hit")
    assert page.inner_text("#role") == "you play seat 0"

    ref = parallel_env(num_players=3)
    ref.reset(seed=SEED)
    game = served.table.game

    # an illegal click is shown, not silent, and changes nothing
    page.click('#table .hit[data-zone="nertz"][data-seat="1"]')
    assert "you play seat 0" in page.inner_text("#flash")
    assert "error" in (page.get_attribute("#flash", "class") or "")
    assert tick_of(page) == 0 and game.env.tick == 0

    clicks = drags = flips = 0
    for _ in range(60):
        tick = tick_of(page)
        moves = [m for m in game.legal_moves() if m["dst"] is not None]
        if moves and (clicks + drags) < 3:
            # a drag onto a work pile when there is one (a lake play otherwise); clicks take the first move
            to_work = [m for m in moves if m["dst"]["zone"] == "work"]
            m = to_work[0] if to_work and drags < clicks else moves[0]
            src = top_of(page, src_selector(m["src"]))
            dst = top_of(page, dst_selector(m["dst"]))
            box = src.bounding_box()
            pos = {"x": box["width"] / 2, "y": 6}  # the card's top strip: the part of a fanned card that shows
            if drags < clicks:
                src.drag_to(dst, source_position=pos)
                drags += 1
            else:
                src.click(position=pos)
                assert "selected" in page.inner_text("#flash")
                dst.click(position={"x": 20, "y": 6})
                clicks += 1
            wait_tick(page, tick + 1)
            assert game.history[-1].moves[0].submitted == m["action"], (m, game.history[-1].moves[0])
        else:  # a flip, by key and by a click on the stock in turn
            if flips % 2 == 0:
                page.keyboard.press("f")
            else:
                page.click('#table .hit[data-zone="stock"][data-seat="0"]')
            wait_tick(page, tick + 1)
            flips += 1
            assert game.history[-1].moves[0].name == "flip"
        check_engine(served, ref)
        if clicks + drags >= 3 or game.done:
            break
    assert clicks >= 2 and drags >= 1 and flips >= 2, (clicks, drags, flips)
    # wait by key
    tick = tick_of(page)
    page.keyboard.press("w")
    wait_tick(page, tick + 1)
    assert game.history[-1].moves[0].submitted == 0
    check_engine(served, ref)
    # what the page's side panel says is the engine's table
    rows = page.locator("#seats tbody tr")
    assert rows.count() == 3
    snap = ref.snapshot()
    for s in range(3):
        cells = rows.nth(s).locator("td")
        assert cells.nth(1).inner_text().split()[0] == str(len(snap["players"][s]["nertz"]))
        assert cells.nth(3).inner_text() == str(len(snap["players"][s]["stock"]))
    assert_screenshot_shows_cards(page, tmp_path, "play_after_moves.png")
    assert not errors, errors
    page.close()


def test_second_tab_watches_and_plays_on_when_the_first_closes(browser: Any, served: Any) -> None:
    """The page's side of it (test_play.py: the server's, and the replay a closed tab leaves on disk)."""
    first = open_table(browser, served.page)
    for k in range(3):
        first.keyboard.press("w")
        wait_tick(first, k + 1)
    second = open_table(browser, served.page)
    assert second.inner_text("#role") == "spectator"
    second.keyboard.press("f")
    assert "spectator" in second.inner_text("#flash")
    first.close()  # the watching tab plays on
    second.wait_for_function("() => document.querySelector('#role').textContent.startsWith('you play')")
    assert "this tab plays seat 0 now" in second.inner_text("#log")
    second.keyboard.press("w")
    wait_tick(second, 4)
    second.close()


def test_game_over_is_shown_the_replay_is_closed_and_a_new_game_deals(browser: Any, tmp_path: Path) -> None:
    with serving(tmp_path, ["greedy"], max_ticks=6) as served:
        page = open_table(browser, served.page)
        for k in range(6):
            page.keyboard.press("w")
            wait_tick(page, k + 1)
        page.wait_for_selector("#over:not([hidden])")
        assert "Game over" in page.inner_text("#over")
        assert page.get_attribute("#table svg", "data-done") == "truncated"
        page.wait_for_function("() => document.querySelector('#flash').textContent.includes('the replay is saved in')")
        page.keyboard.press("f")
        assert "game is over" in page.inner_text("#flash")
        assert_screenshot_shows_cards(page, tmp_path, "play_game_over.png")
        path = served.table.game.replay_file  # (closed with its last line: test_play.py)
        page.keyboard.press("n")
        page.wait_for_function("() => document.querySelector('#over').hidden")
        assert tick_of(page) == 0 and served.table.game.seed == SEED + 1
        assert served.table.game.replay_file != path
        page.close()


def test_real_time__the_table_ticks_by_itself_and_a_key_becomes_the_next_tick_s_action(browser: Any,
                                                                                      tmp_path: Path) -> None:
    with serving(tmp_path, ["heuristic"], step=False, tick_ms=250) as served:
        page = open_table(browser, served.page)
        wait_tick(page, 2)  # no click: the clock runs and the person waits
        game = served.table.game
        assert [r.moves[0].submitted for r in game.history[:2]] == [0, 0]
        page.keyboard.press("p")
        page.wait_for_function("() => document.querySelector('#status').textContent.includes('PAUSED')")
        paused_at = game.env.tick
        page.keyboard.press("f")  # queued while paused: played on the first tick after the pause
        page.wait_for_function("() => document.querySelector('#pending').textContent.startsWith('next tick: flip')")
        time.sleep(0.6)
        assert game.env.tick == paused_at and tick_of(page) == paused_at
        page.keyboard.press("p")
        wait_tick(page, paused_at + 1)
        assert game.history[paused_at].moves[0].name == "flip"
        assert page.inner_text("#pending") == ""
        ref = parallel_env(num_players=2)
        ref.reset(seed=SEED)
        page.keyboard.press("p")
        page.wait_for_function("() => document.querySelector('#status').textContent.includes('PAUSED')")
        check_engine(served, ref)
        page.close()


# ------------------------------------------------------------------ the page's own headers, in the browser
def test_token_mode__a_malformed_cookie__the_token_leaves_the_address__another_origin_cannot_frame_the_table(
        browser: Any, tmp_path: Path) -> None:
    """Another application's malformed cookie costs nothing; the token leaves the address bar; a page on
    another port (the cookie ignores ports) cannot frame the table; the page keeps to its security policy."""
    token = "t" * 32
    with serving(tmp_path, ["greedy"], token=token) as s:
        context = browser.new_context()
        context.add_cookies([{"name": "pref", "value": '{"x":1}', "url": s.page},
                             {"name": "a", "value": "b c", "url": s.page}])
        page = context.new_page()
        violations: list[str] = []
        page.on("console", lambda msg: violations.append(msg.text) if "Content Security Policy" in msg.text else None)
        page.goto(s.page + f"?token={token}")
        page.wait_for_selector("#table svg .hit")
        assert page.inner_text("#role").startswith("you play")
        assert "token" not in page.url and page.url == s.page
        page.reload()  # the cookie alone carries the token now
        page.wait_for_selector("#table svg .hit")
        assert page.inner_text("#role").startswith("you play")
        page.keyboard.press("w")
        wait_tick(page, 1)
        assert not violations, violations
        site = tmp_path / "evil"  # a page on another port of 127.0.0.1 that frames the table
        site.mkdir()
        (site / "index.html").write_text(f'<iframe src="{s.page}" width="900" height="600"></iframe>')
        with loopback_http(str(site)) as evil_url:
            evil = context.new_page()
            evil.goto(evil_url)  # returns once the frame is loaded, or refused
            framed = evil.frames[1]
            assert framed.url.startswith("chrome-error:") and framed.query_selector("#table") is None  # refused
            assert len(s.table.tabs) == 1, "the framed page connected a tab"
        context.close()


# ------------------------------------------------------------------ the replay page
@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("browser")
    rep = d / "game.jsonl.gz"
    play(RecordReplay(parallel_env(num_players=3, nertz_size=8), rep, agents=["alice", "bob", "carol"]), seed=21, bad_every=9)
    html = d / "game.html"
    assert replay_main([str(rep), "-o", str(html)]) == 0
    return rep, html


def _shown_table(page) -> dict:  # type: ignore[no-untyped-def]
    """What the page's drawing shows: per seat the work piles' cards, the Nertz and waste tops; the lake tops."""
    return page.evaluate(
        """() => {
        const svg = document.querySelector('#table svg');
        const id = u => { const h = u.getAttribute('href'); return h.slice(3).replace(/x/g, '*'); };
        const seats = [...svg.querySelectorAll('g.seat')].map(g => {
            const uses = [...g.querySelectorAll(':scope > use')].map(id);
            const work = [...g.querySelectorAll('g.pile')].map(p => [...p.querySelectorAll('use')].map(id));
            return {tops: uses, work};
        });
        const lake = [...svg.querySelectorAll('g.lake use')].map(id);
        return {tick: +svg.dataset.tick, seats, lake};
    }"""
    )


def test_replay_page_scrubs_to_the_end(browser: Any, page_file: tuple[Path, Path], tmp_path: Path) -> None:
    rep_path, html = page_file
    rep = load_replay(rep_path)
    final = rep.final
    assert final is not None
    page, errors = watched_page(browser, 1280, 900, allowed=("file:", "data:"))
    page.goto(html.as_uri())
    page.wait_for_function("window.nertzReplay !== undefined")
    n = page.evaluate("window.nertzReplay.frames")
    assert n == len(rep.ticks)
    # scrub to the end with the slider, as a person drags it
    page.eval_on_selector("#scrub", f"(s) => {{ s.value = {n}; s.dispatchEvent(new Event('input')); }}")
    shown = _shown_table(page)
    assert shown["tick"] == final["tick"]
    assert shown["lake"] == [f[-1][0] for f in final["lake"]]
    for p_, (seat, pl) in enumerate(zip(shown["seats"], final["players"], strict=True)):
        assert seat["work"] == pl["work"], f"seat {p_}"
        tops = [c for c in seat["tops"] if c != "back"]
        assert tops == pl["nertz"][-1:] + pl["waste"][-1:], f"seat {p_}"
    assert "end" in page.inner_text("#tickno")
    # keyboard: Left steps back a tick, End returns to the end, Home goes to the deal
    page.keyboard.press("ArrowLeft")
    assert _shown_table(page)["tick"] == final["tick"] - 1
    page.keyboard.press("End")
    assert _shown_table(page)["tick"] == final["tick"]
    # an illegal action is named on its tick
    bad = next(i for i, t in enumerate(rep.ticks, start=1) if t.get("il"))
    page.eval_on_selector("#scrub", f"(s) => {{ s.value = {bad}; s.dispatchEvent(new Event('input')); }}")
    assert "ILLEGAL" in page.inner_text("#moves")
    # play runs by itself
    page.keyboard.press("Home")
    page.click("#play")
    page.wait_for_function("window.nertzReplay.current() >= 2", timeout=10_000)
    page.click("#play")
    assert_screenshot_shows_cards(page, tmp_path, "replay.png", full_page=True)
    assert not errors, errors
    page.close()


def test_replay_page_shows_a_round_end_then_the_new_deal(browser: Any, match_game: Path, match_page: str,
                                                         tmp_path: Path) -> None:
    """In a match the tick that ends a round shows that round's table and its scoring apart from the moves,
    then the next deal; the chart's labels read at a normal size."""
    html = tmp_path / "match.html"
    html.write_text(match_page, encoding="utf-8")
    end_table = next(t for t in load_replay(match_game).ticks if "end" in t)["end_table"]
    page, errors = watched_page(browser, 1280, 900)
    page.goto(html.as_uri())
    page.wait_for_function("window.nertzReplay !== undefined")
    k = page.evaluate("window.nertzReplay.data.kinds.findIndex(x => x[0] === 'round_end')")
    page.evaluate(f"window.nertzReplay.show({k})")
    shown = _shown_table(page)
    assert shown["tick"] == end_table["tick"] > 0 and shown["lake"]  # round 1's last table, its lake full
    assert page.evaluate("+document.querySelector('#table svg').dataset.round") == 0
    assert page.inner_text("#tickno").startswith(f"round 1, tick {end_table['tick']} (round 1 over)")
    event = page.inner_text("#event")
    assert "Round end: greedy" in event and "left in the Nertz pile" in event
    assert "(-" not in page.inner_text("#moves")  # no move shows the round's penalty as its cost
    page.keyboard.press("ArrowRight")
    shown = _shown_table(page)
    assert shown["tick"] == 0 and not shown["lake"]  # the new deal, made in that same step
    assert page.evaluate("+document.querySelector('#table svg').dataset.round") == 1
    assert page.inner_text("#tickno").startswith("round 2, tick 0 (round 2 dealt)")
    assert "new deal" in page.inner_text("#moves")
    px = page.evaluate("document.querySelector('#chart text').getBoundingClientRect().height")
    assert px >= 10  # the axis labels (they were about 5 px)
    assert not errors, errors
    page.close()


def test_browser_draws_the_svg_as_resvg_does(browser: Any, tmp_path: Path) -> None:
    """One drawing: Chromium's rendering of table_svg and table_rgb's raster agree (fonts play no part)."""
    from PIL import Image

    from nertz_env.render.draw import table_rgb, table_svg

    snap = json.loads((Path(__file__).parent / "golden" / "snap_p4_jokers.json").read_text())
    svg = table_svg(snap)
    ref = table_rgb(snap).astype(np.int16)
    h, w = ref.shape[:2]
    page = browser.new_page(viewport={"width": w, "height": h})
    page.set_content(f"<html><body style='margin:0'>{svg}</body></html>")
    shot = tmp_path / "svg.png"
    page.screenshot(path=str(shot), clip={"x": 0, "y": 0, "width": w, "height": h})
    page.close()
    got = np.asarray(Image.open(shot).convert("RGB")).astype(np.int16)
    assert got.shape == ref.shape
    diff = np.abs(got - ref).max(axis=2)
    assert diff.mean() < 2 and (diff > 80).mean() < 0.002  # anti-aliasing may differ, the picture does not
