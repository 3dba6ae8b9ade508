"""A replay page in a real browser: Playwright driving Debian's chromium (``apt-get install -y chromium``).

Run alone with ``pytest -m browser``; skipped when Playwright or /usr/bin/chromium (or NERTZ_CHROMIUM) is
missing. The page is opened from disk (file://, no server, no network), scrubbed to the end, and the table it
shows is read back from the drawing's structure and compared with the file's closing snapshot; a screenshot
is checked not to be blank."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from nertz_env.environment import parallel_env
from nertz_env.replay import RecordReplay, load_replay
from nertz_env.replay_cli import main as replay_main

pytestmark = pytest.mark.browser
sync_api = pytest.importorskip("playwright.sync_api", reason="needs the browser extra: pip install '.[browser]'")
CHROMIUM = os.environ.get("NERTZ_CHROMIUM", "/usr/bin/chromium")
if not os.path.exists(CHROMIUM):
    pytest.skip(f"no chromium at {CHROMIUM} (apt-get install -y chromium, or set NERTZ_CHROMIUM)", allow_module_level=True)
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"]


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("browser")
    rep = d / "game.jsonl.gz"
    env = RecordReplay(parallel_env(num_players=3), rep, agents=["alice", "bob", "carol"])
    obs, _ = env.reset(seed=21)
    rng = np.random.default_rng(0)
    n = 0
    while env.agents:
        acts = {}
        for a in env.agents:
            legal = np.flatnonzero(obs[a]["action_mask"])
            moves = legal[legal > 1]
            acts[a] = int(rng.choice(moves)) if len(moves) and rng.random() < 0.8 else int(rng.choice(legal))
        if n % 9 == 4:
            acts["player_1"] = 10_000  # illegal: the page must mark it
        obs, *_ = env.step(acts)
        n += 1
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


def test_replay_page_scrubs_to_the_end(page_file: tuple[Path, Path], tmp_path: Path) -> None:
    rep_path, html = page_file
    rep = load_replay(rep_path)
    final = rep.final
    assert final is not None
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: None if r.url.startswith(("file:", "data:")) else errors.append(r.url))
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
            page.wait_for_function("window.nertzReplay.current() >= 3", timeout=10_000)
            page.click("#play")
            shot = tmp_path / "replay.png"
            page.screenshot(path=str(shot), full_page=True)
            assert not errors, errors
        finally:
            browser.close()
    from PIL import Image

    img = np.asarray(Image.open(shot).convert("RGB")).astype(np.int16)
    assert img.std() > 20  # not blank
    white = (img.min(axis=2) > 235).mean()  # card faces
    assert 0.01 < white < 0.6
    if os.environ.get("NERTZ_KEEP_SHOT"):
        Image.open(shot).save(os.environ["NERTZ_KEEP_SHOT"])



def test_replay_page_shows_a_round_end_then_the_new_deal(tmp_path: Path) -> None:
    """In a match the tick that ends a round shows that round's table and its scoring apart from the moves,
    then the next deal; the chart's labels read at a normal size."""
    rep_path = tmp_path / "match.jsonl.gz"
    env = RecordReplay(parallel_env(num_players=2, rounds=2), rep_path, agents=["greedy", "random"])
    obs, _ = env.reset(seed=5)
    rng = np.random.default_rng(1)
    while env.agents:
        acts = {}
        for a in env.agents:
            legal = np.flatnonzero(obs[a]["action_mask"])
            moves = legal[legal > 1]
            acts[a] = int(rng.choice(moves)) if len(moves) and rng.random() < 0.8 else int(rng.choice(legal))
        obs, *_ = env.step(acts)
    html = tmp_path / "match.html"
    assert replay_main([str(rep_path), "-o", str(html)]) == 0
    end_table = next(t for t in load_replay(rep_path).ticks if "end" in t)["end_table"]
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
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
        finally:
            browser.close()



def test_browser_draws_the_svg_as_resvg_does(tmp_path: Path) -> None:
    """One drawing: Chromium's rendering of table_svg and table_rgb's raster agree (fonts play no part)."""
    import json as _json

    from PIL import Image

    from nertz_env.draw import table_rgb, table_svg

    snap = _json.loads((Path(__file__).parent / "golden" / "snap_p4_jokers.json").read_text())
    svg = table_svg(snap)
    ref = table_rgb(snap).astype(np.int16)
    h, w = ref.shape[:2]
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": w, "height": h})
            page.set_content(f"<html><body style='margin:0'>{svg}</body></html>")
            shot = tmp_path / "svg.png"
            page.screenshot(path=str(shot), clip={"x": 0, "y": 0, "width": w, "height": h})
        finally:
            browser.close()
    got = np.asarray(Image.open(shot).convert("RGB")).astype(np.int16)
    assert got.shape == ref.shape
    diff = np.abs(got - ref).max(axis=2)
    assert diff.mean() < 2 and (diff > 80).mean() < 0.002  # anti-aliasing may differ, the picture does not
