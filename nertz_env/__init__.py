"""nertz-env: Nertz (Nerts, Pounce, Racing Demon) as a PettingZoo environment (docs/env/nertz.md).

``dir(nertz_env)`` lists the public API (``__all__``). Importing the package registers the Gymnasium ids
(:mod:`nertz_env.registration`). The adapters are imported on first use, so ``import nertz_env.engine`` (the
rules) loads neither numba's compiled rules nor PettingZoo until a table is made.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from nertz_env import registration  # noqa: F401  (registers the Gymnasium ids)
from nertz_env.actions import ActionTable, action_table
from nertz_env.config import NertzConfig, Rules, make_config
from nertz_env.observation import ObsLayout, decode, obs_layout

if TYPE_CHECKING:
    from nertz_env.agent_vector import NertzAgentVectorEnv, agent_vector_env
    from nertz_env.environment import NertzParallelEnv, describe_action, env, parallel_env, raw_env
    from nertz_env.global_state import StateLayout, state_layout
    from nertz_env.moves import MoveLayout, move_features, move_layout
    from nertz_env.vector import NertzVectorEnv, vector_env

__version__ = "0.2.0"

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
    "MoveLayout": "nertz_env.moves",
    "move_features": "nertz_env.moves",
    "move_layout": "nertz_env.moves",
}

__all__ = [
    "ActionTable",
    "MoveLayout",
    "NertzAgentVectorEnv",
    "NertzConfig",
    "NertzParallelEnv",
    "NertzVectorEnv",
    "ObsLayout",
    "Rules",
    "StateLayout",
    "__version__",
    "action_table",
    "agent_vector_env",
    "decode",
    "describe_action",
    "env",
    "make_config",
    "move_features",
    "move_layout",
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
