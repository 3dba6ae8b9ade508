"""Small text helpers shared by the tools' error messages."""

from __future__ import annotations

import re
from typing import Any

#: the most characters of a value an error message repeats
SHORT = 60


def short(value: Any, limit: int = SHORT) -> str:
    """``repr(value)`` cut to about ``limit`` characters, saying how long it was: an error message names a bad
    value without echoing a 10 MB field whole."""
    if isinstance(value, (str, bytes)) and len(value) > 4 * limit:  # no repr of the whole of a huge string
        text = repr(value[: 2 * limit])
        total = len(value)
    else:
        try:
            text = repr(value)
        except ValueError:  # an integer past Python's limit for int to text (4,300 digits)
            return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
        total = len(text)
    if len(text) <= limit and total == len(text):
        return text
    return f"{text[:limit]}... ({total} characters)"


def cut(message: str, limit: int = 400) -> str:
    """``message`` cut to ``limit`` characters (a last guard for messages built from others' text)."""
    return message if len(message) <= limit else f"{message[:limit]}... ({len(message)} characters)"


_ROLE = re.compile(
    r":(?:py:)?(?:class|func|meth|mod|attr|data|exc|obj|ref|doc|envvar|option|term):`[~!]?([^`<]*?)(?:\s*<[^>]*>)?`"
)


def plain(text: str) -> str:
    """A docstring's reStructuredText made plain for ``--help``: ``:class:`~a.B``` -> ``a.B`` (``B`` with the
    ``~``), double backquotes dropped, ``::`` at a line's end made ``:``."""

    def role(m: re.Match[str]) -> str:
        target = m.group(1).strip()
        return target.rsplit(".", 1)[-1] if m.group(0).split("`", 1)[1].startswith("~") else target

    text = _ROLE.sub(role, text)
    text = text.replace("``", "")
    return re.sub(r"\s?::$", ":", text, flags=re.MULTILINE)
