"""Every wrapper of ``gymnasium.wrappers.vector`` on ``agent_vector_env``: the ones that apply to this
observation work (tested here, on the dict observation or on ``obs_format="array"``), and the others are named
in docs/env/api.md with the reason and the alternative. A wrapper Gymnasium adds fails the first test until
it is classified."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium
import gymnasium.wrappers.vector as W
import numpy as np
import pytest

import nertz_env

API = Path(__file__).resolve().parent.parent / "docs" / "env" / "api.md"

# wrapper -> (the observation form it works on, how to make it)
WORKS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "DictInfoToList": ("dict", lambda e: W.DictInfoToList(e)),
    "FilterObservation": ("dict", lambda e: W.FilterObservation(e, ["observation"])),
    "FlattenObservation": ("array", lambda e: W.FlattenObservation(e)),
    "ReshapeObservation": ("array", lambda e: W.ReshapeObservation(e, (1, e.single_observation_space.shape[0]))),
    "RescaleObservation": ("array", lambda e: W.RescaleObservation(e, -1.0, 1.0)),
    "DtypeObservation": ("array", lambda e: W.DtypeObservation(e, np.float64)),
    "NormalizeObservation": ("array", lambda e: W.NormalizeObservation(e)),
    "TransformObservation": ("dict", lambda e: W.TransformObservation(e, lambda o: o)),
    "TransformAction": ("dict", lambda e: W.TransformAction(e, lambda a: a)),
    "TransformReward": ("dict", lambda e: W.TransformReward(e, lambda r: 2 * r)),
    "ClipReward": ("dict", lambda e: W.ClipReward(e, -1, 1)),
    "NormalizeReward": ("dict", lambda e: W.NormalizeReward(e)),
    "RecordEpisodeStatistics": ("dict", lambda e: W.RecordEpisodeStatistics(e)),
    "NumpyToTorch": ("dict", lambda e: W.NumpyToTorch(e)),
    "VectorizeTransformObservation": (
        "dict",
        lambda e: W.VectorizeTransformObservation(e, gymnasium.wrappers.FilterObservation, filter_keys=["observation"]),
    ),
    "VectorizeTransformReward": (
        "dict",
        lambda e: W.VectorizeTransformReward(e, gymnasium.wrappers.ClipReward, min_reward=-1, max_reward=1),
    ),
    "VectorizeTransformAction": (
        "dict",
        lambda e: W.VectorizeTransformAction(
            e, gymnasium.wrappers.TransformAction, func=lambda a: a, action_space=e.single_action_space
        ),
    ),
}
# wrappers that do not apply to a Discrete action and a feature-vector observation (see docs/env/api.md)
NOT_APPLICABLE = {
    "GrayscaleObservation",  # image observations
    "ResizeObservation",  # image observations
    "ClipAction",  # Box actions
    "RescaleAction",  # Box actions
    "JaxToNumpy",  # envs that return jax arrays
    "JaxToTorch",  # envs that return jax arrays
    "ArrayConversion",  # envs that return another array library's arrays
    "RecordVideo",  # one frame per sub-environment; needs moviepy: use vector_env's frames
    "HumanRendering",  # one frame per sub-environment; needs pygame: use render_mode="human"
}


def test_every_vector_wrapper_is_classified_and_named_in_the_docs() -> None:
    names = set(W.__all__)
    assert names == set(WORKS) | NOT_APPLICABLE, sorted(names ^ (set(WORKS) | NOT_APPLICABLE))
    text = API.read_text()
    missing = [n for n in sorted(names) if f"`{n}`" not in text]
    assert not missing, f"docs/env/api.md does not name {missing}"


@pytest.mark.parametrize("name", sorted(WORKS))
def test_wrapper__works_on_the_per_agent_env(name: str) -> None:
    form, make = WORKS[name]
    if name == "NumpyToTorch":
        pytest.importorskip("torch", reason="needs the test extra (pip install '.[test]')")
        pytest.importorskip("array_api_compat", reason="needs the test extra (pip install '.[test]')")
    env = make(nertz_env.agent_vector_env(2, num_players=2, max_ticks=20, obs_format=form))
    obs, info = env.reset(seed=0)
    for _ in range(25):  # across the round's end and the autoreset
        masks = [i["action_mask"] for i in info] if isinstance(info, list) else info["action_mask"]
        acts = np.array([int(np.flatnonzero(np.asarray(m))[0]) for m in masks])
        if name == "NumpyToTorch":
            import torch

            acts = torch.as_tensor(acts)
        obs, _, _, _, info = env.step(acts)
    assert env.observation_space.contains(np.asarray(obs) if not isinstance(obs, dict) else obs) or name in (
        "NumpyToTorch",
        "NormalizeObservation",  # normalized values leave the Box's [0, 1] bounds by design
        "RescaleObservation",
        "TransformObservation",
    )
    env.close()


def test_normalize_observation__on_the_array_form_normalizes_and_the_mask_stays_in_the_infos() -> None:
    envs = W.NormalizeObservation(nertz_env.agent_vector_env(2, num_players=2, obs_format="array"))
    obs, info = envs.reset(seed=0)
    assert obs.shape == (4, envs.single_observation_space.shape[0])
    assert info["action_mask"].shape == (4, envs.single_action_space.n)
    np.testing.assert_array_equal(envs.unwrapped.action_masks(), info["action_mask"].astype(bool))
    with pytest.raises(ValueError, match="obs_format must be 'dict' or 'array'"):
        nertz_env.agent_vector_env(1, obs_format="box")
