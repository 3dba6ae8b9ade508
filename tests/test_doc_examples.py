"""Every Python example of README.md and the docs pages runs, and prints what the page shows.

The ```` ```python ```` blocks of one page run in order in one namespace (a session: a later block may use what
an earlier one made), in a temporary folder (files the examples write go there), with ``__name__`` set to
``"__main__"`` (so an ``if __name__ == "__main__":`` guard runs). Comment lines right before a block's fence
(``<!-- test: ... -->``, invisible on the rendered page and on the repository) change how it runs:

- ``<!-- test: replace OLD -> NEW ; OLD2 -> NEW2 -->``: run the block with these text replacements (a small form
  of a long example: ``total_timesteps=100_000 -> total_timesteps=256``); each OLD must occur in the block.
- ``<!-- test: requires MODULE ... -->``: skip the page's remaining blocks when a module (an optional extra) is
  missing, saying which.
- ``<!-- test: output -->`` before a ```` ```text ```` block right after a Python block: what that block printed
  must equal the text (a line ``...`` stands for any lines).

Pages are those whose commands tests/test_docs_commands.py runs. The quick start's printed comments are checked
too.
"""

from __future__ import annotations

import contextlib
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from test_docs_commands import doc_pages

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Block:
    page: str
    line: int  # of the opening fence
    code: str
    replace: list[tuple[str, str]] = field(default_factory=list)
    requires: list[str] = field(default_factory=list)
    output: str | None = None  # the text block the page shows as its printed output

    def source(self) -> str:
        code = self.code
        for old, new in self.replace:
            if old not in code:
                raise AssertionError(f"{self.page} line {self.line}: `test: replace {old} -> ...` does not occur in the block")
            code = code.replace(old, new)
        return code


MARKER = re.compile(r"^<!--\s*test:\s*(.*?)\s*-->\s*$")


def page_blocks(text: str, page: str) -> list[Block]:
    lines = text.splitlines()
    blocks: list[Block] = []
    markers: list[str] = []
    i = 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        if m:
            markers.append(m.group(1))
            i += 1
            continue
        fence = re.match(r"^```(\S*)", lines[i])  # a MyST directive (```{image}) is a fence too
        if not fence:
            if lines[i].strip():
                markers = []
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        body = "\n".join(lines[i + 1 : j]) + "\n"
        lang = fence.group(1)
        if lang == "python":
            block = Block(page, i + 1, body)
            for mk in markers:
                kind, _, rest = mk.partition(" ")
                if kind == "replace":
                    for pair in rest.split(" ; "):
                        old, sep, new = pair.partition(" -> ")
                        if not sep:
                            raise AssertionError(f"{page} line {i}: `test: replace` needs OLD -> NEW, got {pair!r}")
                        block.replace.append((old.strip(), new.strip()))
                elif kind == "requires":
                    block.requires += rest.split()
                else:
                    raise AssertionError(f"{page} line {i}: unknown marker `test: {mk}` before a python block")
            blocks.append(block)
        elif markers == ["output"]:
            if not blocks or lang != "text":
                raise AssertionError(f"{page} line {i + 1}: `test: output` must precede a ```text block after a python block")
            blocks[-1].output = body
        elif markers:
            raise AssertionError(f"{page} line {i + 1}: a `test:` marker before a {lang or 'plain'} block")
        markers = []
        i = j + 1
    return blocks


def _all_pages() -> list[tuple[str, list[Block]]]:
    """Each page's blocks, a block whose code ran on an earlier page left out."""
    seen: set[str] = set()
    out = []
    for page in doc_pages():
        rel = page.relative_to(ROOT).as_posix()
        blocks = [b for b in page_blocks(page.read_text(), rel) if not (b.code in seen or seen.add(b.code))]
        if blocks:
            out.append((rel, blocks))
    return out


PAGES = _all_pages()


def _matches(shown: str, printed: str) -> bool:
    """``printed`` equals ``shown``, where a shown line ``...`` matches any number of printed lines."""
    pattern = "".join(
        r"(?:.*\n)*?" if line.strip() == "..." else re.escape(line.rstrip()) + r"[ \t]*\n"
        for line in shown.splitlines()
    )
    return re.fullmatch(pattern, printed if printed.endswith("\n") else printed + "\n") is not None


def run_blocks(blocks: list[Block]) -> str:
    """Runs the blocks in order in one namespace in the current folder; returns what the last one printed."""
    namespace: dict[str, object] = {"__name__": "__main__"}
    printed = ""
    for b in blocks:
        for module in b.requires:
            pytest.importorskip(module, reason=f"{b.page} line {b.line} needs {module} (an optional extra)")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(b.source(), f"{b.page}:{b.line}", "exec"), namespace)
        printed = out.getvalue()
        if b.output is not None:
            assert _matches(b.output, printed), (
                f"{b.page} line {b.line}: the page shows this output:\n{b.output}\nthe block printed:\n{printed}"
            )
    return printed


@pytest.mark.parametrize("page,blocks", [pytest.param(p, b, id=p) for p, b in PAGES])
def test_page_examples_run(page: str, blocks: list[Block], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    printed = run_blocks(blocks)
    if page == "README.md":  # its one block, the quick start, prints what its comments say
        code = blocks[0].code
        score = re.search(r'print\(infos\["player_0"\]\["score"\]\)\s+# (-?\d+):', code)
        action = re.search(r"print\(nertz_env.describe_action\(\d+\)\)\s+# (.*)", code)
        assert score and action, "the quick start's checked comments changed: update this test"
        assert len(blocks) == 1 and {score.group(1), action.group(1).strip()} <= set(printed.splitlines()), printed


def test_markers_are_read() -> None:
    """The block finder reads every marker it documents, and refuses a marker it does not know."""
    text = "\n".join([
        "<!-- test: replace 100_000 -> 64 ; n_steps=256 -> n_steps=16 -->",
        "<!-- test: requires ray -->",
        "```python",
        "learn(100_000, n_steps=256)",
        "```",
        "<!-- test: output -->",
        "```text",
        "done",
        "```",
        "```python",
        "x = 1",
        "```",
    ])
    a, b = page_blocks(text, "sample.md")
    assert a.source() == "learn(64, n_steps=16)\n"
    assert a.requires == ["ray"] and a.output == "done\n"
    assert b.replace == [] and b.output is None and b.line == 10
    with pytest.raises(AssertionError, match="unknown marker"):
        page_blocks("<!-- test: shrink x -->\n```python\nx\n```\n", "bad.md")
    with pytest.raises(AssertionError, match="does not occur"):
        Block("p.md", 1, "x = 1\n", replace=[("y", "z")]).source()


def test_output_matching() -> None:
    assert _matches("a\n...\nz\n", "a\nb\nc\nz\n")
    assert _matches("(1024, 4, 446)\n", "(1024, 4, 446)\n")
    assert not _matches("(1024, 4, 446)\n", "(1024, 4, 447)\n")
    assert not _matches("a\nz\n", "a\nb\nz\n")


def test_every_page_with_code_is_found() -> None:
    """A page of the guides with Python examples is among those run (the finder did not miss the folder)."""
    pages = {p for p, _ in PAGES}
    assert {"README.md", "docs/guides/vector-envs.md"} <= pages, sorted(pages)
