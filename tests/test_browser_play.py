"""nertz-play in a real browser: Playwright drives Debian's chromium against a server on a free loopback port.

The page is clicked the way a person plays (a card, then where it goes; a drag; the stock; keys), and after
every tick the server's table is compared with a ``parallel_env`` stepped from the same seed with the same
actions. Screenshots are checked not to be blank. Needs ``pip install playwright`` and ``apt-get install -y
chromium`` (Playwright's own browser download is not used); run alone with ``-m browser``.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--no-first-run"]
SEED = 3


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no chromium at {CHROMIUM} (apt-get install -y chromium)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


class Served:
    """A nertz-play table served by uvicorn in a thread on a free loopback port."""

    def __init__(self, hub: Any, token: str | None = None) -> None:
        import uvicorn

        from nertz_env.play.server import create_app

        self.hub = hub
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/"
        self.server = uvicorn.Server(uvicorn.Config(create_app(hub, token=token), log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.sock.close()


def serve(tmp_path: Path, specs: list[str], step: bool = True, tick_ms: int = 1000, token: str | None = None,
          **rules: Any) -> Served:
    import nertz_env
    from nertz_env.agents import make_agent
    from nertz_env.play.game import PlayGame
    from nertz_env.play.record import replay_recorder, table_drawer
    from nertz_env.play.server import Hub

    env = nertz_env.parallel_env(num_players=len(specs) + 1, **rules)
    game = PlayGame(env, [make_agent(s) for s in specs], specs, seat=0, seed=SEED,
                    recorder_factory=replay_recorder(str(tmp_path)))
    return Served(Hub(game, step=step, tick_ms=tick_ms, drawer=table_drawer(), log=lambda text: None), token)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    s = serve(tmp_path, ["heuristic", "search"])
    yield s
    s.stop()


def shots_dir(tmp_path: Path) -> Path:
    d = Path(os.environ.get("NERTZ_PLAY_SHOTS") or tmp_path)
    d.mkdir(parents=True, exist_ok=True)
    return d


def assert_not_blank(path: Path) -> None:
    from PIL import Image

    with Image.open(path) as im:
        px = np.asarray(im.convert("RGB")).astype(np.int32)
    assert px.shape[0] > 300 and px.shape[1] > 600
    assert px.std() > 25, "the screenshot is (nearly) one colour"
    colours = np.unique(px.reshape(-1, 3) // 8, axis=0).shape[0]
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


def check_engine(served: Served, ref: Any) -> None:
    """The served table equals ``ref`` stepped with every action the served table played."""
    game = served.hub.game
    while ref.tick < game.tick_count:
        moves = game.history[ref.tick].moves
        ref.step({f"player_{m.seat}": m.submitted for m in moves})
    assert game.env.snapshot() == ref.snapshot()


def test_play_by_clicking__the_table_changes_exactly_as_the_engine_says(browser: Any, served: Served,
                                                                         tmp_path: Path) -> None:
    import nertz_env

    out = shots_dir(tmp_path)
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(served.url)
    page.wait_for_selector("#table svg .hit")
    assert page.inner_text("#role") == "you play seat 0"
    page.screenshot(path=str(out / "play_start.png"))
    assert_not_blank(out / "play_start.png")

    ref = nertz_env.parallel_env(num_players=3)
    ref.reset(seed=SEED)
    game = served.hub.game

    # an illegal click is shown, not silent, and changes nothing
    page.click('#table .hit[data-zone="nertz"][data-seat="1"]')
    assert "you play seat 0" in page.inner_text("#flash")
    assert "error" in (page.get_attribute("#flash", "class") or "")
    assert tick_of(page) == 0 and game.tick_count == 0

    clicks = drags = flips = 0
    for _ in range(60):
        tick = tick_of(page)
        moves = [m for m in game.legal_moves() if m["dst"] is not None]
        if moves and (clicks + drags) < 4:
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
        elif flips % 2 == 0:
            page.keyboard.press("f")
            wait_tick(page, tick + 1)
            flips += 1
            assert game.history[-1].moves[0].name == "flip"
        else:
            page.click('#table .hit[data-zone="stock"][data-seat="0"]')
            wait_tick(page, tick + 1)
            flips += 1
            assert game.history[-1].moves[0].name == "flip"
        check_engine(served, ref)
        if clicks + drags >= 4 or game.done:
            break
    assert clicks >= 2 and drags >= 1, f"only {clicks} click moves and {drags} drags in 60 ticks"
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
    page.screenshot(path=str(out / "play_after_moves.png"))
    assert_not_blank(out / "play_after_moves.png")
    assert not errors, errors
    page.close()


def test_second_tab_watches_and_a_closed_tab_keeps_the_replay(browser: Any, served: Served, tmp_path: Path) -> None:
    import json

    out = shots_dir(tmp_path)
    first = browser.new_page(viewport={"width": 1200, "height": 800})
    first.goto(served.url)
    first.wait_for_selector("#table svg .hit")
    for k in range(3):
        first.keyboard.press("w")
        wait_tick(first, k + 1)
    second = browser.new_page(viewport={"width": 1200, "height": 800})
    second.goto(served.url)
    second.wait_for_selector("#table svg .hit")
    assert second.inner_text("#role") == "spectator"
    second.keyboard.press("f")
    assert "spectator" in second.inner_text("#flash")
    second.screenshot(path=str(out / "play_spectator.png"))
    assert_not_blank(out / "play_spectator.png")
    first.close()  # the watching tab plays on
    second.wait_for_function("() => document.querySelector('#role').textContent.startsWith('you play')")
    assert "this tab plays seat 0 now" in second.inner_text("#log")
    second.keyboard.press("w")
    wait_tick(second, 4)
    second.close()
    path = served.hub.replay_path()
    assert path is not None and os.path.exists(path)
    with open(path, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f if line.strip()]
    assert len(lines) >= 5  # the header and the four ticks played, all on disk while the game runs


def test_game_over_is_shown_the_replay_is_closed_and_a_new_game_deals(browser: Any, tmp_path: Path) -> None:
    from nertz_env.replay import load_replay, verify_replay

    served = serve(tmp_path, ["greedy"], max_ticks=6)
    try:
        page = browser.new_page(viewport={"width": 1200, "height": 800})
        page.goto(served.url)
        page.wait_for_selector("#table svg .hit")
        for k in range(6):
            page.keyboard.press("w")
            wait_tick(page, k + 1)
        page.wait_for_selector("#over:not([hidden])")
        assert "Game over" in page.inner_text("#over")
        assert page.get_attribute("#table svg", "data-done") == "truncated"
        page.wait_for_function("() => document.querySelector('#flash').textContent.includes('the replay is saved in')")
        page.keyboard.press("f")
        assert "game is over" in page.inner_text("#flash")
        out = shots_dir(tmp_path)
        page.screenshot(path=str(out / "play_game_over.png"))
        assert_not_blank(out / "play_game_over.png")
        path = served.hub.replay_path()
        rep = load_replay(path or "")
        assert rep.final is not None and verify_replay(rep) == 6
        page.keyboard.press("n")
        page.wait_for_function("() => document.querySelector('#over').hidden")
        assert tick_of(page) == 0 and served.hub.game.seed == SEED + 1
        assert served.hub.replay_path() != path
        page.close()
    finally:
        served.stop()


def test_real_time__the_table_ticks_by_itself_and_a_key_becomes_the_next_tick_s_action(browser: Any,
                                                                                      tmp_path: Path) -> None:
    import nertz_env

    served = serve(tmp_path, ["heuristic"], step=False, tick_ms=250)
    try:
        page = browser.new_page(viewport={"width": 1200, "height": 800})
        page.goto(served.url)
        page.wait_for_selector("#table svg .hit")
        wait_tick(page, 2)  # no click: the clock runs and the person waits
        game = served.hub.game
        assert [r.moves[0].submitted for r in game.history[:2]] == [0, 0]
        page.keyboard.press("p")
        page.wait_for_function("() => document.querySelector('#status').textContent.includes('PAUSED')")
        paused_at = game.tick_count
        page.keyboard.press("f")  # queued while paused: played on the first tick after the pause
        page.wait_for_function("() => document.querySelector('#pending').textContent.startsWith('next tick: flip')")
        time.sleep(0.6)
        assert game.tick_count == paused_at and tick_of(page) == paused_at
        page.keyboard.press("p")
        wait_tick(page, paused_at + 1)
        assert game.history[paused_at].moves[0].name == "flip"
        assert page.inner_text("#pending") == ""
        ref = nertz_env.parallel_env(num_players=2)
        ref.reset(seed=SEED)
        page.keyboard.press("p")
        page.wait_for_function("() => document.querySelector('#status').textContent.includes('PAUSED')")
        check_engine(served, ref)
        page.close()
    finally:
        served.stop()


# ------------------------------------------------------------------ the page's own headers, in the browser
@contextlib.contextmanager
def framing_page(target: str) -> Iterator[str]:
    """A page on another port of 127.0.0.1 that frames ``target``; yields its address."""
    import http.server

    body = f'<iframe src="{target}" width="900" height="600"></iframe>'.encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("token", [None, "t" * 32], ids=["loopback", "token"])
def test_a_page_of_another_origin_cannot_frame_the_table(browser: Any, tmp_path: Path, token: str | None) -> None:
    """A page on another port of this host (in token mode the token's cookie reaches it: cookies ignore ports)
    framed the table: its tab watched, and took the seat when the player's tab left. Now the browser refuses
    the frame (the answer's headers) and no tab connects from it."""
    s = serve(tmp_path, ["greedy"], token=token)
    try:
        context = browser.new_context()
        player = context.new_page()
        player.goto(s.url + (f"?token={token}" if token else ""))
        player.wait_for_selector("#table svg .hit")
        with framing_page(s.url) as evil_url:
            evil = context.new_page()
            evil.goto(evil_url)
            evil.wait_for_timeout(1500)  # time for a framed page's websocket to connect
            assert len(s.hub.tabs) == 1, "the framed page connected a tab"
            framed = evil.frames[1]
            assert framed.url.startswith("chrome-error:") and framed.query_selector("#table") is None  # refused
        context.close()
    finally:
        s.stop()


def test_a_malformed_cookie_of_another_application_and_the_token_leaving_the_address(
        browser: Any, tmp_path: Path) -> None:
    """Another application's malformed cookie on this host locked the player out (403 on the script, the table
    stuck at "connecting"); the token stayed in the address bar and the history. And the page keeps to its
    own content security policy: not one violation."""
    token = "t" * 32
    s = serve(tmp_path, ["greedy"], token=token)
    try:
        context = browser.new_context()
        context.add_cookies([{"name": "pref", "value": '{"x":1}', "url": s.url},
                             {"name": "a", "value": "b c", "url": s.url}])
        page = context.new_page()
        violations: list[str] = []
        page.on("console", lambda msg: violations.append(msg.text) if "Content Security Policy" in msg.text else None)
        page.goto(s.url + f"?token={token}")
        page.wait_for_selector("#table svg .hit")
        assert page.inner_text("#role").startswith("you play")
        assert "token" not in page.url and page.url == s.url
        page.reload()  # the cookie alone carries the token now
        page.wait_for_selector("#table svg .hit")
        assert page.inner_text("#role").startswith("you play")
        page.keyboard.press("w")
        wait_tick(page, 1)
        assert not violations, violations
        context.close()
    finally:
        s.stop()
