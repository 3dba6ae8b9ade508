"""nertz-env: Nertz (Nerts, Pounce, Racing Demon) as a PettingZoo environment.

Entry points: :func:`parallel_env` (PettingZoo ``ParallelEnv``), :func:`env` (AEC), :class:`raw_env`,
:func:`vector_env` (many tables in one call), :func:`agent_vector_env` (one Gymnasium sub-environment per
seat), :func:`describe_action`, :func:`decode` (observation vector to a
readable dict), :class:`NertzConfig` (every rules option), :func:`state_layout` (the global state's layout).
``dir(nertz_env)`` lists exactly this public API (``__all__``). Importing the package registers the Gymnasium
ids ``nertz_env/Nertz-v0`` and ``nertz_env/NertzAgents-v0`` (:mod:`nertz_env.registration`) when Gymnasium
is or gets imported.

The adapters are imported on first use, so ``import nertz_env.engine`` (the rules) loads numpy and numba
only, never PettingZoo or Gymnasium.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from nertz_env._checkout import extend_path
from nertz_env.actions import ActionTable, action_table
from nertz_env.config import NertzConfig, make_config
from nertz_env.observation import ObsLayout, decode, obs_layout

if TYPE_CHECKING:
    from nertz_env.agent_vector import NertzAgentVectorEnv, agent_vector_env
    from nertz_env.environment import NertzParallelEnv, describe_action, env, parallel_env, raw_env
    from nertz_env.global_state import StateLayout, state_layout
    from nertz_env.vector import NertzVectorEnv, vector_env

__version__ = "0.2.0"

# In a source checkout agents/, train/ and eval/ sit beside this folder; make them nertz_env.agents etc.
extend_path(__path__, __file__)

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


class _RegisterWithGymnasium(importlib.abc.MetaPathFinder):
    """Registers the Gymnasium ids (:mod:`nertz_env.registration`) right after ``gymnasium`` itself has been
    imported, so ``import nertz_env`` stays free of Gymnasium (it takes a second to import) and the ids exist
    whichever of the two a user imports first. It finds ``gymnasium`` with the other finders, runs it, then
    registers; it removes itself on first use."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "gymnasium":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            _register_gym_ids()

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _register_gym_ids() -> None:
    try:
        from nertz_env.registration import register_envs

        register_envs()
    except Exception as e:  # pragma: no cover - a Gymnasium that changed its registry
        warnings.warn(f"nertz_env could not register its Gymnasium ids: {e}", stacklevel=2)


if "gymnasium" in sys.modules:
    _register_gym_ids()
elif not any(isinstance(f, _RegisterWithGymnasium) for f in sys.meta_path):
    sys.meta_path.insert(0, _RegisterWithGymnasium())


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
