"""Training of Nertz agents with Stable-Baselines3 (needs the ``train`` extra): the config, the learner envs,
the opponent pool, the reward wrappers, the move-scoring policy and :class:`Trainer` (``nertz-train``). torch
and Stable-Baselines3 load when a class here is first used. See docs/guides/training-sb3.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nertz_env.agents.meta import CheckpointError, IncompatibleCheckpointError
    from nertz_env.agents.policy import PolicyAgent, load_policy_agent
    from nertz_env.agents.pool import OpponentPool
    from nertz_env.single import NertzSingleAgentEnv
    from nertz_env.train.config import ConfigError, TrainConfig
    from nertz_env.train.moves import MovesPolicy
    from nertz_env.train.trainer import Trainer
    from nertz_env.train.vec import NertzVecEnv
    from nertz_env.train.wrappers import PotentialShaping, RelativeReward, VecTimer

_LAZY = {
    "TrainConfig": "nertz_env.train.config",
    "ConfigError": "nertz_env.train.config",
    "CheckpointError": "nertz_env.agents.meta",
    "IncompatibleCheckpointError": "nertz_env.agents.meta",
    "PolicyAgent": "nertz_env.agents.policy",
    "load_policy_agent": "nertz_env.agents.policy",
    "OpponentPool": "nertz_env.agents.pool",
    "NertzSingleAgentEnv": "nertz_env.single",
    "NertzVecEnv": "nertz_env.train.vec",
    "PotentialShaping": "nertz_env.train.wrappers",
    "RelativeReward": "nertz_env.train.wrappers",
    "VecTimer": "nertz_env.train.wrappers",
    "Trainer": "nertz_env.train.trainer",
    "MovesPolicy": "nertz_env.train.moves",
}

__all__ = [
    "CheckpointError",
    "ConfigError",
    "IncompatibleCheckpointError",
    "MovesPolicy",
    "NertzSingleAgentEnv",
    "NertzVecEnv",
    "OpponentPool",
    "PolicyAgent",
    "PotentialShaping",
    "RelativeReward",
    "TrainConfig",
    "Trainer",
    "VecTimer",
    "load_policy_agent",
]


def __getattr__(name: str) -> Any:
    """The class or function ``name``, imported from its module on first use (torch loads with it)."""
    if name not in _LAZY:
        raise AttributeError(f"module 'nertz_env.train' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value
