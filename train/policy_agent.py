"""A trained MaskablePPO policy as an :class:`~nertz_env.agents.Agent`, and the ``.zip`` checkpoint loader.

``load_policy_agent("runs/x/model.zip", deterministic="true")`` reads the checkpoint's nertz-env record
(:mod:`nertz_env.train.meta`), checks it, rebuilds only the policy network (no optimizer, no algorithm, no
global seeding) and wraps it. :mod:`nertz_env.train` registers this loader for ``.zip`` with the agents
registry, so ``make_agent("runs/x/model.zip:deterministic=false")`` and ``nertz-eval`` load checkpoints
by path.

The agent samples from its own ``numpy`` generator (seeded in ``reset``), never from torch's global
generator: evaluating a snapshot in the middle of training leaves the training run's random streams as
they were, and a game is reproducible from the agent seed alone. Building the network runs under
``torch.random.fork_rng`` for the same reason. Policies loaded from the same file (same path and
modification time) are shared, so many seats can hold agents of one snapshot and the opponent pool can
batch their forward passes (:meth:`PolicyAgent.probabilities`).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import torch

from nertz_env.config import NertzConfig
from nertz_env.train.meta import check_compatible, meta_config, read_meta

_CACHE: dict[tuple[str, float], tuple[Any, dict[str, Any]]] = {}
_CACHE_SIZE = 16  # policies kept loaded (agents hold their own references; this only saves reloading)


def _as_bool(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{name} must be true or false, got {value!r}")


def load_policy(path: str) -> tuple[Any, dict[str, Any]]:
    """The policy network and the nertz-env record of the checkpoint ``path`` (cached per file version).

    Raises:
        FileNotFoundError: no such file.
        CheckpointError: not a nertz-env checkpoint, or the record does not match the network inside.
    """
    from stable_baselines3.common.save_util import load_from_zip_file

    from nertz_env.train.meta import CheckpointError

    meta = read_meta(path)
    key = (os.path.abspath(path), os.path.getmtime(path))
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    data, params, _ = load_from_zip_file(path, device="cpu", load_data=True, print_system_info=False)
    if data is None or "policy" not in params:
        raise CheckpointError(f"{path}: the zip holds no SB3 policy (no data or policy.pth)")
    obs_space, act_space = data["observation_space"], data["action_space"]
    if tuple(obs_space.shape) != (int(meta["obs_size"]),) or int(act_space.n) != int(meta["num_actions"]):
        raise CheckpointError(
            f"{path}: the network's spaces (observation {tuple(obs_space.shape)}, {act_space.n} actions) "
            "do not "
            f"match its nertz-env record (observation ({meta['obs_size']},), {meta['num_actions']} actions)"
        )
    with torch.random.fork_rng(devices=[]):  # building the network must not move torch's global generator
        policy = data["policy_class"](
            observation_space=obs_space,
            action_space=act_space,
            lr_schedule=lambda _: 0.0,
            **data.get("policy_kwargs", {}),
        )
    policy.load_state_dict(params["policy"])
    policy.set_training_mode(False)
    policy.to("cpu")
    _CACHE[key] = (policy, meta)
    while len(_CACHE) > _CACHE_SIZE:
        del _CACHE[next(iter(_CACHE))]
    return policy, meta


def policy_probabilities(policy: Any, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Action probabilities (float64, (n, A)) of ``policy`` for a batch; masked actions get 0."""
    with torch.no_grad():
        obs_t = torch.as_tensor(np.asarray(observations, dtype=np.float32))
        dist = policy.get_distribution(obs_t, action_masks=np.asarray(masks, dtype=bool))
        probs = dist.distribution.probs.cpu().numpy().astype(np.float64)
    probs[~np.asarray(masks, dtype=bool)] = 0.0
    return probs


class PolicyAgent:
    """A MaskablePPO policy behind the Agent protocol (see the module docstring).

    Args:
        policy: a ``MaskableActorCriticPolicy`` (shared between agents of the same snapshot).
        meta: the checkpoint's nertz-env record; ``reset`` refuses tables of other rules.
        deterministic: play the most probable legal action instead of sampling.
        name: the agent's ``name`` (``repr``, the opponent pool's logs; tournaments label agents by their spec).
    """

    def __init__(
        self, policy: Any, meta: dict[str, Any], deterministic: bool = False, name: str = "policy"
    ) -> None:
        self.policy = policy
        self.meta = meta
        self.trained_config = meta_config(meta)
        self.deterministic = bool(deterministic)
        self.name = name
        self.rng = np.random.default_rng()
        self.seat = 0

    def reset(self, config: NertzConfig, seat: int, seed: int | None = None) -> None:
        if config != self.trained_config:
            check_compatible(self.meta, config, where=f"policy {self.name!r}")
        self.seat = seat
        self.rng = np.random.default_rng(seed)

    def probabilities(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """Action probabilities for a batch of observations (the pool batches seats sharing a policy)."""
        return policy_probabilities(self.policy, observations, masks)

    def choose(self, probs: np.ndarray) -> int:
        """An action from one row of :meth:`probabilities`: the argmax, or a draw from the own generator."""
        if self.deterministic:
            return int(np.argmax(probs))
        cdf = np.cumsum(probs)
        k = int(np.searchsorted(cdf, self.rng.random() * cdf[-1], side="right"))
        k = min(k, probs.shape[0] - 1)
        if probs[k] <= 0.0:  # rounding at the edge of the cdf: fall back to the most probable action
            k = int(np.argmax(probs))
        return k

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return self.choose(self.probabilities(observation[None, :], action_mask[None, :])[0])

    def __getstate__(self) -> dict[str, Any]:
        # Pickled inside training checkpoints: keep the file and generator, not the network.
        state = dict(self.__dict__)
        state["policy"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        path = self.meta.get("path")
        if path is not None:
            self.policy, _ = load_policy(path)

    def __repr__(self) -> str:
        return f"PolicyAgent({self.name!r}, deterministic={self.deterministic})"


def load_policy_agent(path: str, **params: Any) -> PolicyAgent:
    """The registry loader for ``.zip`` checkpoints: ``make_agent("model.zip:deterministic=true")``.

    Parameters: ``deterministic`` (play the argmax; default false) and ``name`` (the agent's ``name``;
    default the path; tournaments label agents by their spec, so ``nertz-eval`` tables show the spec).

    Raises:
        FileNotFoundError: no such file.
        AgentSpecError: a parameter other than ``deterministic`` and ``name``, or a bad value.
        CheckpointError: not a nertz-env checkpoint (no record), or its network does not match its record.
    """
    from nertz_env.agents import AgentSpecError

    unknown = sorted(set(params) - {"deterministic", "name"})
    if unknown:
        raise AgentSpecError(
            f"checkpoint {path!r} has no parameter {', '.join(unknown)}; "
            "it takes deterministic (bool), name (str)"
        )
    try:
        det = _as_bool(params.get("deterministic", False), "deterministic")
    except ValueError as e:
        raise AgentSpecError(f"checkpoint {path!r}: {e}") from None
    policy, meta = load_policy(path)
    meta = dict(meta, path=os.path.abspath(path))
    name = params.get("name")
    return PolicyAgent(policy, meta, deterministic=det, name=str(name) if name is not None else path)
