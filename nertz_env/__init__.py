"""nertz-env: Nertz (Nerts, Pounce, Racing Demon) as a PettingZoo environment.

Entry points: :func:`parallel_env` (PettingZoo ``ParallelEnv``), :func:`env` (AEC), :class:`raw_env`,
:func:`vector_env` (many tables in one call), :func:`describe_action`, :func:`decode` (observation vector to a
readable dict), :class:`NertzConfig` (every rules option).
"""

from nertz_env.actions import ActionTable, action_table
from nertz_env.config import NertzConfig, make_config
from nertz_env.env import NertzParallelEnv, describe_action, env, parallel_env, raw_env
from nertz_env.observation import ObsLayout, decode
from nertz_env.vector import NertzVectorEnv, vector_env

__version__ = "0.1.0"

__all__ = [
    "ActionTable",
    "NertzConfig",
    "NertzParallelEnv",
    "NertzVectorEnv",
    "ObsLayout",
    "__version__",
    "action_table",
    "decode",
    "describe_action",
    "env",
    "make_config",
    "parallel_env",
    "raw_env",
    "vector_env",
]
