"""The package's long description (the page a package index shows): README.md with its relative links made
absolute, so they work outside the repository.

Everything else is in pyproject.toml, which lists ``readme`` as dynamic for this. README.md links to files
of the repository (``train/README.md``, ``bench/results/vector_scaling.png``) and to its own headings
(``#rules-and-options``); on a package index those would point nowhere. Here each becomes an address in the
repository (pyproject's ``Repository`` URL): files as ``/blob/main/PATH``, folders as ``/tree/main/PATH``,
pictures as ``/raw/main/PATH`` (so they display) and headings as ``/blob/main/README.md#anchor``.
``tests/test_packaging.py`` checks that every link of README.md resolves both in the checkout and here.
"""

from __future__ import annotations

import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
REF = "main"  # the branch the absolute links point into

# [text](target "title") and ![alt](target), reference definitions "[id]: target", and HTML src=/href=
_INLINE = re.compile(r"(?P<bang>!?)\[(?P<text>(?:[^\[\]]|\[[^\]]*\])*)\]\((?P<target>[^()\s]+)(?P<title>\s+\"[^\"]*\")?\)")
_REFDEF = re.compile(r"^(?P<lead> {0,3}\[[^\]]+\]:\s*)(?P<target>\S+)", re.M)
_HTML = re.compile(r"(?P<attr>\b(?:src|href)=)(?P<q>[\"'])(?P<target>[^\"']+)(?P=q)")
_CODE = re.compile(r"`(?:[^`\n]|\n(?![ \t]*\n))+`")  # a code span: may break a line, not a paragraph
_ABSOLUTE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, https:, mailto:, ...


def repository_url(root: str = HERE) -> str:
    """pyproject.toml's ``[project.urls] Repository`` (read without a TOML parser: setup.py runs on Python
    3.10 too, which has no tomllib)."""
    with open(os.path.join(root, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    table = re.search(r"^\[project\.urls\]\s*$(?P<body>.*?)(?=^\[)", text, re.M | re.S)
    match = table and re.search(r'^Repository\s*=\s*"(?P<url>[^"]+)"', table.group("body"), re.M)
    if not match:
        raise RuntimeError("pyproject.toml has no [project.urls] Repository")
    return match.group("url").rstrip("/")


def absolute_link(target: str, repo: str, image: bool, root: str = HERE, page: str = "README.md") -> str:
    """``target`` as the page at ``root/page`` links it, made absolute in the repository ``repo``."""
    if _ABSOLUTE.match(target) or target.startswith("//"):
        return target
    if target.startswith("#"):
        return f"{repo}/blob/{REF}/{page}{target}"
    path, _, fragment = target.partition("#")
    rel = os.path.normpath(os.path.join(os.path.dirname(page), path)).replace(os.sep, "/")
    if image:
        kind = "raw"
    elif os.path.isdir(os.path.join(root, rel)):
        kind = "tree"
    else:
        kind = "blob"
    return f"{repo}/{kind}/{REF}/{rel}" + (f"#{fragment}" if fragment else "")


def long_description(root: str = HERE, page: str = "README.md") -> str:
    """``root/page`` with every relative link absolute (see the module's doc)."""
    repo = repository_url(root)
    with open(os.path.join(root, page), encoding="utf-8") as f:
        text = f.read()

    def substitute(part: str) -> str:
        # a link-like text inside a `code span` is text, not a link (a code span inside a link's text is fine)
        spans = [m.span() for m in _CODE.finditer(part)]

        def in_code(m: re.Match) -> bool:
            return any(a <= m.start() < b for a, b in spans)

        def inline(m: re.Match) -> str:
            if in_code(m):
                return m.group(0)
            target = absolute_link(m.group("target"), repo, image=bool(m.group("bang")), root=root, page=page)
            return f"{m.group('bang')}[{m.group('text')}]({target}{m.group('title') or ''})"

        def refdef(m: re.Match) -> str:
            target = m.group("target")
            image = target.lower().endswith((".png", ".svg", ".gif", ".jpg", ".jpeg", ".webp"))
            return m.group("lead") + absolute_link(target, repo, image=image, root=root, page=page)

        def html(m: re.Match) -> str:
            if in_code(m):
                return m.group(0)
            target = absolute_link(m.group("target"), repo, image=m.group("attr") == "src=", root=root, page=page)
            return f"{m.group('attr')}{m.group('q')}{target}{m.group('q')}"

        part = _INLINE.sub(inline, part)
        spans = [m.span() for m in _CODE.finditer(part)]
        part = _HTML.sub(html, part)
        return _REFDEF.sub(refdef, part)

    # fenced code blocks are text, not links: leave them as they are
    parts = re.split(r"(^```.*?^```[^\n]*$)", text, flags=re.M | re.S)
    for i in range(0, len(parts), 2):
        parts[i] = substitute(parts[i])
    return "".join(parts)


if __name__ == "__main__":
    from setuptools import setup

    setup(long_description=long_description(), long_description_content_type="text/markdown")
