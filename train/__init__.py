"""Training of Nertz agents with Stable-Baselines3 (``nertz_env.train``; needs the ``train`` extra).

Modules, one concern each:

    config.py        TrainConfig: every option, from a TOML/JSON file and flags
    single.py        NertzSingleAgentEnv: the single-agent Gymnasium view (one learner, opponents from a pool)
    vec.py           NertzVecEnv: learning seats of many tables as one SB3 VecEnv (self-play), with masks
    pool.py          OpponentPool: scripted baselines and frozen snapshots, sampled by weight
    policy_agent.py  PolicyAgent: a saved policy behind the Agent protocol; the ``.zip`` loader
    wrappers.py      PotentialShaping and RelativeReward (train-time rewards) and VecTimer (env time)
    meta.py          the nertz-env record of a checkpoint (rules, table size, layout) and its checks
    evaluate.py      gauntlets against the baselines through nertz_env.eval
    trainer.py       Trainer: the run (checkpoints that resume exactly, evaluation, throughput)
    cli.py           the ``nertz-train`` command

Importing this package registers the ``.zip`` checkpoint loader with :mod:`nertz_env.agents`, so
``make_agent("runs/x/policy.zip")`` and ``nertz-eval`` load trained policies; torch and Stable-Baselines3 are
imported only when a class of this package is first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from nertz_env.agents import register_loader

if TYPE_CHECKING:
    from nertz_env.train.config import ConfigError, TrainConfig
    from nertz_env.train.meta import CheckpointError, IncompatibleCheckpointError
    from nertz_env.train.policy_agent import PolicyAgent, load_policy_agent
    from nertz_env.train.pool import OpponentPool
    from nertz_env.train.single import NertzSingleAgentEnv
    from nertz_env.train.trainer import Trainer
    from nertz_env.train.vec import NertzVecEnv
    from nertz_env.train.wrappers import PotentialShaping, RelativeReward, VecTimer

_LAZY = {
    "TrainConfig": "nertz_env.train.config",
    "ConfigError": "nertz_env.train.config",
    "CheckpointError": "nertz_env.train.meta",
    "IncompatibleCheckpointError": "nertz_env.train.meta",
    "PolicyAgent": "nertz_env.train.policy_agent",
    "load_policy_agent": "nertz_env.train.policy_agent",
    "OpponentPool": "nertz_env.train.pool",
    "NertzSingleAgentEnv": "nertz_env.train.single",
    "NertzVecEnv": "nertz_env.train.vec",
    "PotentialShaping": "nertz_env.train.wrappers",
    "RelativeReward": "nertz_env.train.wrappers",
    "VecTimer": "nertz_env.train.wrappers",
    "Trainer": "nertz_env.train.trainer",
}

__all__ = [
    "CheckpointError",
    "ConfigError",
    "IncompatibleCheckpointError",
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


def _load_zip(path: str, **params: Any) -> Any:
    from nertz_env.train.policy_agent import load_policy_agent

    return load_policy_agent(path, **params)


register_loader(".zip", _load_zip)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'nertz_env.train' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
