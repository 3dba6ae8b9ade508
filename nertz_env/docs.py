"""The README's generated sections (action table, observation slices): print them or rewrite the README.

``python -m nertz_env.docs README.md`` rewrites the blocks between ``<!-- name:start -->`` and
``<!-- name:end -->``; ``tests/test_docs.py`` fails when the README and the code drift apart.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

from nertz_env.actions import action_table
from nertz_env.config import NertzConfig
from nertz_env.observation import obs_layout


def sections() -> dict[str, str]:
    """Generated Markdown for the default config, by marker name."""
    config = NertzConfig()
    return {"actions": action_table(config).markdown(), "observation": obs_layout(config).markdown()}


def render(text: str) -> str:
    """``text`` with every generated block replaced by its current content."""

    def _replacer(body: str) -> Callable[[re.Match[str]], str]:
        return lambda m: m.group(1) + body + m.group(2)

    for name, body in sections().items():
        pattern = re.compile(rf"(<!-- {name}:start -->\n).*?(\n<!-- {name}:end -->)", re.S)
        if not pattern.search(text):
            raise ValueError(f"the README has no <!-- {name}:start --> ... <!-- {name}:end --> block")
        text = pattern.sub(_replacer(body), text)
    return text


def main() -> None:
    if len(sys.argv) != 2:
        for name, body in sections().items():
            print(f"<!-- {name}:start -->\n{body}\n<!-- {name}:end -->\n")
        return
    path = Path(sys.argv[1])
    path.write_text(render(path.read_text()))


if __name__ == "__main__":
    main()
