"""nertz-env: Nertz (Nerts, Pounce, Racing Demon) as a PettingZoo environment.

Entry points: :func:`parallel_env` (PettingZoo ``ParallelEnv``), :func:`env` (AEC), :class:`raw_env`,
:func:`vector_env` (many tables in one call), :func:`agent_vector_env` (one Gymnasium sub-environment per
seat), :func:`describe_action`, :func:`decode` (observation vector to a
readable dict), :class:`NertzConfig` (every rules option), :func:`state_layout` (the global state's layout).
``dir(nertz_env)`` lists exactly this public API (``__all__``). Importing the package registers the Gymnasium
ids ``nertz_env/Nertz-v0`` and ``nertz_env/NertzAgents-v0`` (:mod:`nertz_env.registration`).

The adapters are imported on first use, so ``import nertz_env.engine`` (the rules) loads neither numba's
compiled rules nor PettingZoo until a table is made.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from nertz_env.actions import ActionTable, action_table
from nertz_env.config import NertzConfig, make_config
from nertz_env.observation import ObsLayout, decode, obs_layout
from nertz_env.registration import register_envs

if TYPE_CHECKING:
    from nertz_env.agent_vector import NertzAgentVectorEnv, agent_vector_env
    from nertz_env.environment import NertzParallelEnv, describe_action, env, parallel_env, raw_env
    from nertz_env.global_state import StateLayout, state_layout
    from nertz_env.vector import NertzVectorEnv, vector_env

__version__ = "0.2.0"

register_envs()

_LAZY = {
    "NertzAgentVectorEnv": "nertz_env.agent_vector",
    "agent_vector_env": "nertz_env.agent_vector",
    "NertzParallelEnv": "nertz_env.environment",
    "describe_action": "nertz_env.environment",
    "env": "nertz_env.environment",
    "parallel_env": "nertz_env.environment",
    "raw_env": "nertz_env.environment",
    "NertzVectorEnv": "nertz_env.vector",
    "vector_env": "nertz_env.vector",
    "StateLayout": "nertz_env.global_state",
    "state_layout": "nertz_env.global_state",
}

__all__ = [
    "ActionTable",
    "NertzAgentVectorEnv",
    "NertzConfig",
    "NertzParallelEnv",
    "NertzVectorEnv",
    "ObsLayout",
    "StateLayout",
    "__version__",
    "action_table",
    "agent_vector_env",
    "decode",
    "describe_action",
    "env",
    "make_config",
    "obs_layout",
    "parallel_env",
    "raw_env",
    "state_layout",
    "vector_env",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'nertz_env' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public API (``__all__``), so ``dir(nertz_env)`` and completion show it and not the imports."""
    return sorted(__all__)
