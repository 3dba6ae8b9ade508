"""The built docs site in a real browser, offline: pages, navigation and search (Playwright and Debian's
chromium). Needs the site built (``python -m sphinx -W --keep-going -b html docs docs/_build/html``, or
``NERTZ_DOCS_HTML``); served from 127.0.0.1, and any request elsewhere fails the test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import loopback_http, watched_page

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parent.parent
SITE = Path(os.environ.get("NERTZ_DOCS_HTML", ROOT / "docs" / "_build" / "html"))
WIDE = (1600, 900)  # Furo shows both sidebars
# the extra first: an install without it (an unpacked sdist, tests/test_packaging.py) skips naming it
sync_api = pytest.importorskip("playwright.sync_api", reason="needs the browser extra (pip install '.[browser]')")
if not (SITE / "index.html").is_file():
    pytest.skip(f"the docs site is not built at {SITE} (python -m sphinx -W --keep-going -b html docs "
                "docs/_build/html)", allow_module_level=True)


@pytest.fixture(scope="module")
def site_url() -> Iterator[str]:
    with loopback_http(str(SITE)) as url:
        yield url


def test_front_page_and_navigation(browser, site_url: str) -> None:  # type: ignore[no-untyped-def]
    page, problems = watched_page(browser, *WIDE, (site_url, "data:", "about:"))
    page.goto(site_url + "index.html")
    assert page.title().startswith("nertz-env"), page.title()
    # the picture of a game is drawn (an SVG the browser loaded, not a broken image)
    width = page.eval_on_selector("article img", "img => img.complete ? img.naturalWidth : 0")
    assert width > 0, "the front page's picture did not load"
    # the sidebar lists the sections; follow it to a guide
    sidebar = page.locator(".sidebar-tree")
    for caption in ("Environment", "Guides", "Reference"):
        assert sidebar.get_by_text(caption, exact=True).count() >= 1, caption
    sidebar.get_by_role("link", name="Getting started").first.click()
    page.wait_for_load_state()
    assert page.url.endswith("guides/getting-started.html"), page.url
    assert page.locator("article h1").first.inner_text().startswith("Getting started")
    # the guide's own links lead on: the environment card, then "next" at the foot of the page
    page.locator("article").get_by_role("link", name="environment card").first.click()
    page.wait_for_load_state()
    assert page.url.endswith("env/nertz.html"), page.url
    assert "Observation space" in page.locator("article").inner_text()
    # the generated action table is on the card (from the code at build time)
    assert page.locator("article table").filter(has_text="lake:nertz").count() >= 1
    page.locator("a.next-page").click()
    page.wait_for_load_state()
    assert page.url.endswith("env/rules.html"), page.url
    assert not problems, problems


def test_a_guide_opens_with_its_code(browser, site_url: str) -> None:  # type: ignore[no-untyped-def]
    page, problems = watched_page(browser, *WIDE, (site_url, "data:", "about:"))
    page.goto(site_url + "guides/training-sb3.html")
    assert page.locator("article h1").first.inner_text().startswith("Training with Stable-Baselines3")
    code = page.locator("article div.highlight-python pre").first.inner_text()
    assert "NertzSingleAgentEnv" in code
    # the page is marked current in the sidebar, and its table of contents links to its own sections
    assert page.locator(".sidebar-tree li.current-page > a").inner_text().startswith("Training with Stable-Baselines3")
    page.locator(".toc-tree").get_by_role("link", name="Run directory").click()
    assert page.url.endswith("#run-directory"), page.url
    assert not problems, problems


@pytest.mark.parametrize("served", [True, False], ids=["http", "file"])
def test_search_finds_a_page_offline(browser, site_url: str, served: bool) -> None:  # type: ignore[no-untyped-def]
    base = site_url if served else SITE.resolve().as_uri() + "/"
    allowed = (base, "data:", "about:") if served else ("file:", "data:", "about:")
    page, problems = watched_page(browser, *WIDE, allowed)
    page.goto(base + "index.html")
    box = page.locator("input[name=q]").first
    box.fill("agent_vector_env")
    box.press("Enter")
    page.wait_for_url("**/search.html**")
    results = page.locator("#search-results ul.search li a")
    results.first.wait_for(timeout=30_000)
    # results arrive one by one; the summary line is written when the search has finished
    page.wait_for_function(
        "() => /found/i.test(document.querySelector('#search-results .search-summary')?.textContent || '')",
        timeout=60_000,
    )
    hrefs = [results.nth(i).get_attribute("href") or "" for i in range(results.count())]
    assert any("vector-envs" in h for h in hrefs), hrefs
    if not served:  # from disk the browser refuses fetch(), so the results come without their excerpts
        problems = [p for p in problems if not (p.startswith("failed: file:") or p == "script error: Failed to fetch")]
    assert not problems, problems
