"""The docs' generated tables match the code (they are produced by ``python -m nertz_env.docs FILE``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nertz_env.docs import render

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
API = ROOT / "docs" / "env" / "api.md"


def test_readme__option_action_and_observation_tables_match_the_code() -> None:
    if not README.exists():
        pytest.fail("README.md is missing")
    text = README.read_text()
    assert render(text, required=("options",)) == text, "README tables drifted: run `python -m nertz_env.docs README.md`"


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
