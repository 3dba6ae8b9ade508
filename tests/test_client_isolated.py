"""Client libraries whose pins conflict with the dev extras, each in a venv of its own (tests/isolated_venv.py:
built once, cached under .venv/isolated/, the checkout's wheel installed afresh each run), and PettingZoo's
five tests on a plain install. All marked ``isolated``: the README's test command skips them, CI's isolated
phase runs them (``pytest -m isolated --isolated``). The scripts they run are in tests/clients/."""

from __future__ import annotations

from pathlib import Path

import pytest

from isolated_venv import build_wheel, client_venv, run_script

pytestmark = pytest.mark.isolated
SCRIPTS = Path(__file__).parent / "clients"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


def test_pettingzoo_five_tests__pass_on_a_plain_install(wheel: Path, tmp_path: Path) -> None:
    """api_test, parallel_api_test, seed_test, max_cycles_test and render_test on the wheel with nothing but its
    own dependencies (render_test failed there while rgb_array was declared without the render extra)."""
    python = client_venv("plain", [], wheel, torch=False)
    out = run_script(python, SCRIPTS / "pettingzoo_plain.py", cwd=tmp_path)
    assert all(out["plain"].values()), out  # no render extra, no torch: really a plain install
    assert "rgb_array" not in out["render_modes"]


AGILERL = ["agilerl==2.58.0", "peft==0.21.2"]  # AgileRL imports peft but does not require it


def test_agilerl_ippo__trains_on_async_pettingzoo_vec_env_with_the_mask_in_the_infos(wheel: Path, tmp_path: Path) -> None:
    """AgileRL's IPPO on its AsyncPettingZooVecEnv over ``parallel_env(obs_key=None)`` (the mask in the infos
    only: AgileRL asserts none is in the observation) trains two learn steps, with masks: no illegal action."""
    python = client_venv("agilerl", AGILERL, wheel)
    out = run_script(python, SCRIPTS / "agilerl_ippo.py", "train", cwd=tmp_path)
    assert out["learns"] == 2 and out["changed"] and out["episodes"] >= 2
    assert out["decisions"] >= 128 and out["illegal"] == 0


def test_agilerl_ippo__pins_agilerls_own_mask_bug(wheel: Path, tmp_path: Path) -> None:
    """AgileRL 2.58's ``IPPO.extract_action_masks`` tests ``None in group_masks`` (ippo.py:466) on the numpy
    arrays its own AsyncPettingZooVecEnv stacks, which raises; docs/clients/index.md shows the one-line
    workaround the train test uses. When AgileRL fixes it this fails: drop the workaround from the docs."""
    python = client_venv("agilerl", AGILERL, wheel)
    out = run_script(python, SCRIPTS / "agilerl_ippo.py", "bug", cwd=tmp_path)
    assert out["error"] is not None and "truth value of an array with more than one element is ambiguous" in out["error"]


def test_benchmarl_custom_task__one_mappo_iteration_with_the_state_critic(wheel: Path, tmp_path: Path) -> None:
    """BenchMARL 1.5.2 (TorchRL 0.11.1) with a custom task over TorchRL's PettingZooWrapper: one MAPPO
    iteration, its critic reading the env's global ``state``."""
    python = client_venv("benchmarl", ["benchmarl==1.5.2"], wheel)
    out = run_script(python, SCRIPTS / "benchmarl_task.py", cwd=tmp_path)
    assert out["iters"] == 1 and out["frames"] >= 100 and out["changed"] and out["has_state_spec"]
    assert ["state"] in out["critic_in_keys"]
