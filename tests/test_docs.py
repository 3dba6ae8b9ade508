"""The README's generated tables match the code (they are produced by ``python -m nertz_env.docs``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nertz_env.docs import render

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme__action_and_observation_tables_match_the_code() -> None:
    if not README.exists():
        pytest.fail("README.md is missing")
    text = README.read_text()
    assert render(text) == text, "README tables drifted: run `python -m nertz_env.docs README.md`"
