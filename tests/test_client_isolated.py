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


# pufferlib-core 3.0.23 requires torch==2.9.0: installed without its requirements beside torch 2.13 (what it
# imports: numpy, gymnasium, torch, psutil)
PUFFERLIB_NO_DEPS = ["pufferlib-core==3.0.23"]


def test_pufferlib_pettingzoo_puffer_env__masked_play_with_the_mask_from_the_struct_view(wheel: Path, tmp_path: Path) -> None:
    """pufferlib-core's ``PettingZooPufferEnv`` over ``parallel_env``: the mask read back through
    ``observations.view(obs_dtype)["action_mask"]`` keeps every action legal, in one env and in
    ``pufferlib.vector`` (Serial, which resets finished envs)."""
    python = client_venv("pufferlib", ["psutil"], wheel, no_deps=PUFFERLIB_NO_DEPS)
    out = run_script(python, SCRIPTS / "pufferlib_route.py", cwd=tmp_path)
    assert out["episodes"] == 3 and out["illegal"] == 0 and out["fields"] == ["action_mask", "observation"]
    assert out["vec_obs_rows"] == 4 and out["vec_steps"] == 40 and out["action_space"] == "Discrete(172)"


def test_rl_zoo3_train__ppo_on_the_gymnasium_id_plays_unmasked_with_flagged_waits(wheel: Path, tmp_path: Path) -> None:
    """RL Zoo 3's ``python -m rl_zoo3.train --algo ppo --env nertz_env/Nertz-v0 --gym-packages nertz_env``
    trains and saves a model; the zoo has no MaskablePPO, so the model's illegal actions are applied as
    waits and flagged (``info["illegal"]``): the gap the clients page names."""
    python = client_venv("rl_zoo3", ["rl_zoo3==2.9.2"], wheel)
    out = run_script(python, SCRIPTS / "rl_zoo3_route.py", cwd=tmp_path)
    assert out["trained"] and out["decisions"] > 0 and 0 < out["illegal"] <= out["decisions"]
