"""Gymnasium ids: nertz_env/Nertz-v0 (the single-agent view, gymnasium.make) and nertz_env/NertzAgents-v0
(the per-agent vector env, gymnasium.make_vec), with the rules as keyword arguments, reached the way
Gymnasium documents it, from the installed package."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium
import numpy as np
import pytest

import nertz_env  # noqa: F401  (registers the ids)


def test_make__the_single_agent_view_with_rules_as_keywords() -> None:
    env = gymnasium.make("nertz_env/Nertz-v0", num_players=3, draw=1, jokers=1, opponents=["random"])
    assert env.spec is not None and env.spec.id == "nertz_env/Nertz-v0"
    cfg = env.unwrapped.config
    assert (cfg.num_players, cfg.draw, cfg.jokers) == (3, 1, 1)
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    obs, reward, term, trunc, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
    assert isinstance(reward, float) and not (term or trunc)
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['drwa'\]"):
        gymnasium.make("nertz_env/Nertz-v0", drwa=1)


def test_make_vec__of_the_single_agent_view_and_of_the_per_agent_env() -> None:
    sync = gymnasium.make_vec("nertz_env/Nertz-v0", num_envs=2, num_players=2, opponents=["random"])
    obs, _ = sync.reset(seed=0)
    assert obs.shape == (2, sync.single_observation_space.shape[0])
    sync.close()
    envs = gymnasium.make_vec("nertz_env/NertzAgents-v0", num_envs=6, num_players=3, draw=1)
    assert envs.num_envs == 6 and envs.unwrapped.num_tables == 2 and envs.unwrapped.config.draw == 1
    obs, infos = envs.reset(seed=0)
    acts = np.array([np.flatnonzero(m)[0] for m in infos["action_mask"]])
    envs.step(acts)
    with pytest.raises(ValueError, match="multiple of num_players=4"):
        gymnasium.make_vec("nertz_env/NertzAgents-v0", num_envs=6)
    with pytest.raises(gymnasium.error.Error):
        gymnasium.make("nertz_env/NertzAgents-v0")  # no single-env form


@pytest.mark.parametrize(
    "code",
    [
        # the module:id form imports the package itself
        'import gymnasium\nenv = gymnasium.make("nertz_env:nertz_env/Nertz-v0", draw=1)',
        # importing nertz_env registers the ids
        'import nertz_env\nimport gymnasium\nenv = gymnasium.make("nertz_env/Nertz-v0", draw=1)',
    ],
    ids=["module-colon-id", "import-nertz_env"],
)
def test_ids__exist_from_a_fresh_interpreter_outside_the_checkout(code: str, tmp_path: Path) -> None:
    code += '\nassert env.unwrapped.config.draw == 1\nprint(env.spec.id)'
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "nertz_env/Nertz-v0"
