"""The README's front page is true: its quick start prints what its comments say it prints."""

from __future__ import annotations

import ast
import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def _quick_start() -> str:
    text = README.read_text()
    section = text[text.index("## Quick start") :]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "the Quick start has no python block"
    return match.group(1)


def test_quick_start_prints_what_its_comments_say() -> None:
    code = _quick_start()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md:quick-start", "exec"), {"__name__": "__readme__"})
    printed = out.getvalue().splitlines()
    checked = 0
    for line in code.splitlines():
        m = re.match(r"print\((.*)\)\s+# (.*)$", line)
        if not m:
            continue
        expr, comment = m.group(1), m.group(2).strip()
        if comment.startswith("{"):  # a literal: the score breakdown
            expected = ast.literal_eval(comment)
            assert any(p.startswith("{") and ast.literal_eval(p) == expected for p in printed), (
                f"README says {expr} prints {comment}; the code printed {printed[-3:]}"
            )
            checked += 1
        elif expr.startswith("nertz_env.describe_action"):
            assert comment in printed, f"README says {expr} prints {comment!r}"
            checked += 1
    assert checked == 2, "the quick start's checked comments changed: update this test"
