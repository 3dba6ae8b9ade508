"""The isolated phase's disk mode (tests/isolated_venv.py ``make_room``): under ``NERTZ_ISOLATED_DISK=low``
building a venv removes the other venvs first, so the phase needs the largest venv's room and not the sum of
them all (CI ran out of disk building the third); unset, every venv is kept for fast reruns; any other value is
refused rather than ignored."""

from __future__ import annotations

from pathlib import Path

import pytest

from isolated_venv import DISK_ENV, make_room


def _venvs(root: Path) -> list[Path]:
    for name in ("plain-aaa", "agilerl-bbb", "benchmarl-ccc"):
        (root / name / "bin").mkdir(parents=True)
        (root / name / "bin" / "python").write_text("")
    (root / "agilerl.lock").write_text("")
    return sorted(root.iterdir())


def test_low__building_one_removes_the_others_and_keeps_the_locks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _venvs(tmp_path)
    monkeypatch.setenv(DISK_ENV, "low")
    make_room(tmp_path / "benchmarl-ccc")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agilerl.lock", "benchmarl-ccc"]
    make_room(tmp_path / "wheel-py3.13-ddd")  # a venv not yet made: the rest go
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agilerl.lock"]


def test_unset__every_venv_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = _venvs(tmp_path)
    monkeypatch.delenv(DISK_ENV, raising=False)
    make_room(tmp_path / "benchmarl-ccc")
    assert sorted(tmp_path.iterdir()) == before


def test_another_value_is_refused_and_removes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = _venvs(tmp_path)
    monkeypatch.setenv(DISK_ENV, "Low")
    with pytest.raises(ValueError, match="the only value is 'low'"):
        make_room(tmp_path / "benchmarl-ccc")
    assert sorted(tmp_path.iterdir()) == before


def test_a_root_not_yet_made_is_fine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DISK_ENV, "low")
    make_room(tmp_path / "isolated" / "plain-aaa")
    assert not (tmp_path / "isolated").exists()
