"""The docs' generated sections (action table, observation slices, info schema, ...): print them or rewrite
a Markdown file.

``python -m nertz_env.cli.docs docs/env/api.md`` rewrites, in each file, the blocks between
``<!-- name:start -->`` and ``<!-- name:end -->``; ``tests/test_docs.py`` fails when a file and the code drift
apart. Each file must hold at least one block, and every block it holds must be a known one.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from nertz_env import infos
from nertz_env.actions import action_table
from nertz_env.config import NertzConfig, options_markdown
from nertz_env.global_state import state_layout
from nertz_env.moves import move_layout
from nertz_env.observation import obs_layout

_BLOCK = re.compile(r"<!-- ([a-z_]+):start -->\n.*?\n<!-- \1:end -->", re.S)


def sections() -> dict[str, str]:
    """Generated Markdown for the default config, by marker name."""
    config = NertzConfig()
    return {
        "options": options_markdown(),
        "actions": action_table(config).markdown(),
        "observation": obs_layout(config).markdown(),
        "infos": infos.markdown(),
        "state": state_layout(config).markdown(),
        "moves": move_layout(config).markdown(),
    }


def render(text: str, required: tuple[str, ...] = ()) -> str:
    """``text`` with every generated block replaced by its current content. Raises ValueError for a block
    name that is not generated, for a ``required`` block that is missing, and for a text with no block."""

    known = sections()
    found = [m.group(1) for m in _BLOCK.finditer(text)]
    unknown = sorted(set(found) - set(known))
    if unknown:
        raise ValueError(f"unknown generated block(s) {unknown}; the blocks are {sorted(known)}")
    missing = [name for name in required if name not in found]
    if missing or not found:
        names = missing or sorted(known)
        raise ValueError(f"no <!-- {names[0]}:start --> ... <!-- {names[0]}:end --> block")
    return _BLOCK.sub(lambda m: f"<!-- {m[1]}:start -->\n{known[m[1]]}\n<!-- {m[1]}:end -->", text)


def main() -> None:
    if len(sys.argv) < 2:
        for name, body in sections().items():
            print(f"<!-- {name}:start -->\n{body}\n<!-- {name}:end -->\n")
        return
    for arg in sys.argv[1:]:
        path = Path(arg)
        path.write_text(render(path.read_text()))


if __name__ == "__main__":
    main()
