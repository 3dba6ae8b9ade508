"""docs/env/api.md's generated blocks (the info schema, the state layout) are the code's (they are written by
``python -m nertz_env.docs docs/env/api.md``), and nertz_env.docs refuses what it cannot render."""

from __future__ import annotations

from pathlib import Path

import pytest

from nertz_env.docs import render

API = Path(__file__).resolve().parent.parent / "docs" / "env" / "api.md"


def test_api_page__info_schema_and_state_layout_match_the_code() -> None:
    text = API.read_text()
    assert render(text, required=("infos", "state")) == text, (
        "docs/env/api.md drifted: run `python -m nertz_env.docs docs/env/api.md`"
    )


def test_render__refuses_an_unknown_block_and_a_file_without_blocks() -> None:
    with pytest.raises(ValueError, match="unknown generated block"):
        render("<!-- nope:start -->\nx\n<!-- nope:end -->")
    with pytest.raises(ValueError, match="no <!-- infos:start -->"):
        render("no blocks here", required=("infos",))
