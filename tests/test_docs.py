"""The docs agree with the code and the repository: generated tables and ``--help`` texts, the rules contract,
the option table, stated defaults, the picture, relative links. The site in a browser: test_docs_site.py."""

from __future__ import annotations

import dataclasses
import re
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"


@pytest.fixture(scope="module")
def nertz_docs() -> types.ModuleType:
    """The site's extension (it imports Sphinx)."""
    pytest.importorskip("sphinx", reason="needs the docs extra")
    sys.path.insert(0, str(DOCS / "_ext"))
    import nertz_docs

    return nertz_docs


def _pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.relative_to(DOCS).parts)


def _directives(name: str) -> list[tuple[Path, str, str]]:
    """(page, argument, :rules: value) of every ```{name} fence of the docs pages."""
    found = []
    for page in _pages():
        lines = page.read_text().splitlines()
        for i, line in enumerate(lines):
            if line.startswith(f"```{{{name}}}"):
                rules = lines[i + 1][len(":rules:"):].strip() if i + 1 < len(lines) and lines[i + 1].startswith(":rules:") else ""
                found.append((page, line.split("}", 1)[1].strip(), rules))
    return found


def test_generated_tables_follow_the_rules_given(nertz_docs: types.ModuleType) -> None:
    rules = nertz_docs._parse_rules('call_mode="manual" allow_tuck=true jokers=2 work_piles=6')
    assert rules == {"call_mode": "manual", "allow_tuck": True, "jokers": 2, "work_piles": 6}
    assert "tuck:" in nertz_docs.generated_markdown("actions", rules)
    assert "tuck:" not in nertz_docs.generated_markdown("actions")
    assert "| `work_cards` | 39-350 | 312 |" in nertz_docs.generated_markdown("observation", rules)
    assert "`work_5`" in nertz_docs.generated_markdown("state", rules)
    card = nertz_docs.generated_markdown("card")
    assert "`Discrete(172)`" in card and "(446,)" in card, card
    with pytest.raises(ValueError, match="no section"):
        nertz_docs.generated_markdown("nothing")


def test_the_command_reference_covers_every_console_script(nertz_docs: types.ModuleType) -> None:
    """docs/reference/cli.md shows every console script's --help, each of a program the extension can run."""
    from nertz_env.cli.commands import COMMANDS  # the console scripts (tests/test_packaging.py: pyproject's)

    shown = {arg for _, arg, _ in _directives("nertz-help")}
    missing = [s for s in COMMANDS if s not in shown]
    assert not missing, f"docs/reference/cli.md has no ```{{nertz-help}} for {missing}"
    for command in shown:
        program = command.split()[0] if not command.startswith("python") else " ".join(command.split()[:3])
        assert program in nertz_docs.PROGRAMS or command.startswith("python bench/"), command


def test_help_is_the_parser_s_in_plain_text_with_no_docstring_markup(nertz_docs: types.ModuleType) -> None:
    """``--help`` of every program the reference shows: the docstrings it is made of lose their reST."""
    for _, command, _ in _directives("nertz-help"):
        if command.startswith("python bench/"):
            continue
        text = nertz_docs.help_text(command)
        assert text.startswith("usage: "), (command, text[:200])
        assert not re.search(r"``|:(class|func|meth|mod|attr|data):`", text), (command, text[:300])
    with pytest.raises(ValueError, match="unknown program"):
        nertz_docs.help_text("nertz-nothing")


def test_plain__makes_rest_plain() -> None:
    from nertz_env._text import plain

    assert plain("see :class:`nertz_env.train.config.TrainConfig` and :func:`~a.b.c`") == (
        "see nertz_env.train.config.TrainConfig and c"
    )
    assert plain("``nertz-play``: take a seat::\n\n    x") == "nertz-play: take a seat:\n\n    x"
    assert plain(":py:class:`a.B`, :envvar:`NUMBA_CACHE_DIR`, :func:`!f` and :doc:`the guide <guides/x>`") == (
        "a.B, NUMBA_CACHE_DIR, f and the guide"
    )
    assert plain("Examples ::") == "Examples:"


def test_undocumented_public_names_are_found(nertz_docs: types.ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("fake_public", "A module.")

    def documented() -> None:
        """Documented."""

    def bare() -> None:
        pass

    class Agentish:
        """An agent by structure: act and reset take their docs from nertz_env.agents.Agent."""

        def act(self, observation, action_mask):  # type: ignore[no-untyped-def]
            return 0

        def reset(self, config, seat, seed=None):  # type: ignore[no-untyped-def]
            pass

        def extra(self) -> None:
            pass

    for f in (documented, bare, Agentish):
        f.__module__ = "fake_public"
        setattr(module, f.__name__, f)
    module.__all__ = ["Agentish", "bare", "documented"]  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_public", module)
    assert nertz_docs.undocumented("fake_public") == ["fake_public.Agentish.extra", "fake_public.bare"]
    for name in ("nertz_env", "nertz_env.agents"):
        assert nertz_docs.undocumented(name) == [], name


def test_rules_page_holds_the_contract() -> None:
    """docs/env/rules.md carries RULES.md (its headings one level down) word for word."""
    places = (ROOT.parent / "shared" / "RULES.md", Path("/work/shared/RULES.md"))
    original = next((p for p in places if p.is_file()), None)
    if original is None:
        pytest.skip("the project's RULES.md (shared/) is not beside this checkout")
    page = (DOCS / "env" / "rules.md").read_text()
    start = page.index("## The rules contract")
    end = page.index("\n## ", start + 3)
    copy = page[start:end].strip().splitlines()
    copy = [re.sub(r"^###", "##", line) for line in copy[1:]]
    source = original.read_text().strip().splitlines()[1:]
    assert copy == source, "docs/env/rules.md and RULES.md differ: copy RULES.md again"


def test_option_table_is_every_option_with_its_default() -> None:
    """The rules page's option table lists every NertzConfig option with its default."""
    from nertz_env import NertzConfig

    page = (DOCS / "env" / "rules.md").read_text()
    section = page[page.index("## Options") :].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| ([^|]+) \|", section, re.M)
    fields = {f.name: f.default for f in dataclasses.fields(NertzConfig)}
    assert [name for name, _ in rows] == list(fields), "the option table's rows are not NertzConfig's fields"
    for name, shown in rows:
        value = shown.strip().split(" (")[0].strip("`")
        expected = fields[name]
        assert value == (repr(expected).replace("'", '"') if isinstance(expected, str) else str(expected)), (name, shown)


def test_picture_is_current() -> None:
    sys.path.insert(0, str(DOCS))
    import make_picture

    svg = make_picture.picture()
    assert svg.startswith("<svg") and 'data-tick="40"' in svg
    assert make_picture.OUT.read_text() == svg, "docs/_static/table.svg is stale: run python docs/make_picture.py"


LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def _relative_links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)  # an example link in inline code is not a link
    links = [a or b for a, b in LINK.findall(text)]
    return [u for u in links if "://" not in u and not u.startswith(("#", "mailto:"))]


def test_every_relative_link_resolves() -> None:
    """Relative links of README.md and the docs reach a file, and anchors a heading (GitHub's slugs)."""
    bad = []
    for page in [README, *_pages()]:
        for url in _relative_links(page):
            path, _, anchor = url.partition("#")
            target = (page.parent / path).resolve()
            if not target.exists():
                bad.append(f"{page.relative_to(ROOT)}: {url}")
                continue
            if anchor and target.suffix == ".md":
                slugs = set()
                for h in re.findall(r"^#{1,6} (.+)$", target.read_text(), re.M):
                    slug = re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
                    slugs.add(slug)
                if anchor not in slugs:
                    bad.append(f"{page.relative_to(ROOT)}: {url} (no heading #{anchor})")
    assert not bad, "broken links:\n" + "\n".join(bad)


def test_api_page_s_info_schema_is_every_key_of_every_env(nertz_docs: types.ModuleType) -> None:
    from nertz_env.infos import SCHEMAS

    assert {("api.md", "infos"), ("api.md", "state")} <= {(p.name, arg) for p, arg, _ in _directives("nertz-generated")}
    text = nertz_docs.generated_markdown("infos")
    for env, keys in SCHEMAS.items():
        table = text.split(f"**{env}**", 1)[1].split("**", 1)[0]
        assert [k.name for k in keys] == re.findall(r"^\| `(\w+)` \|", table, re.M), env


def test_pages_give_the_training_defaults_the_code_has() -> None:
    from nertz_env.train.config import TrainConfig

    defaults = TrainConfig().flat()
    phrases = (r"`(\w+)`,? (\d[\d,_]*) by default", r"`(\w+)` defaults to (\d[\d,_]*)", r"`(\w+)` \(default (\d[\d,_]*)\)")
    checked = []
    for doc in [README, ROOT / "train" / "README.md", *_pages()]:
        for name, number in (m for p in phrases for m in re.findall(p, doc.read_text())):
            if name in defaults:
                checked.append(name)
                assert int(number.replace(",", "").replace("_", "")) == defaults[name], (doc.name, name, defaults[name])
    assert "eval_deals" in checked
