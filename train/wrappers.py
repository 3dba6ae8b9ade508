"""VecEnv wrappers of the trainer: potential-based shaping on the Nertz pile and the relative reward (both
train-time only), and the env-time stopwatch. See docs/guides/training-sb3.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvObs, VecEnvStepReturn

from nertz_env.config import NertzConfig
from nertz_env.observation import obs_layout


class PotentialShaping(VecEnvWrapper):
    """Potential-based shaping on the Nertz pile: ``r' = r + scale * (gamma * Phi(s') - Phi(s))``, ``Phi(s) =
    -coef * nertz_count(s)`` (``coef`` default: ``config.nertz_penalty``), ``Phi(terminal) = 0``. See
    docs/guides/training-sb3.md ("Reward shaping")."""

    def __init__(
        self,
        venv: VecEnv,
        config: NertzConfig,
        scale: float = 1.0,
        gamma: float = 1.0,
        coef: float | None = None,
    ) -> None:
        super().__init__(venv)
        self.index = obs_layout(config).slices["nertz_count"].start
        self.nertz_size = config.nertz_size
        self.coef = float(config.nertz_penalty if coef is None else coef)
        self.scale = float(scale)
        self.gamma = float(gamma)
        self._phi = np.zeros(self.num_envs, dtype=np.float64)

    def potential(self, obs: Any) -> np.ndarray:
        """Phi of a batch of (non-terminal) observations."""
        return -self.coef * np.rint(np.asarray(obs)[..., self.index] * self.nertz_size)

    def reset(self) -> VecEnvObs:
        obs = self.venv.reset()
        self._phi = self.potential(obs)
        return obs

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, dones, infos = self.venv.step_wait()
        phi_next = np.where(dones, 0.0, self.potential(obs))
        bonus = self.scale * (self.gamma * phi_next - self._phi)
        self._phi = self.potential(obs)  # a finished slot's obs is already its next episode's first one
        return obs, (rewards + bonus).astype(np.float32), dones, infos

    def state_dict(self) -> dict[str, Any]:
        """The potential of every slot's current observation, for a checkpoint."""
        return {"phi": self._phi.copy()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`state_dict` saved."""
        self._phi = np.asarray(state["phi"], dtype=np.float64).copy()


class RelativeReward(VecEnvWrapper):
    """Reward minus ``info["rivals_reward"]``, the mean reward of the seats on other teams (NertzVecEnv and
    NertzSingleAgentEnv report it)."""

    def reset(self) -> VecEnvObs:
        return self.venv.reset()

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, dones, infos = self.venv.step_wait()
        rivals = np.fromiter((info["rivals_reward"] for info in infos), np.float64, len(infos))
        return obs, (rewards - rivals).astype(np.float32), dones, infos


class VecTimer(VecEnvWrapper):
    """Accumulates the wall time spent in the wrapped VecEnv (``seconds``)."""

    def __init__(self, venv: VecEnv) -> None:
        super().__init__(venv)
        self.seconds = 0.0

    def _timed(self, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        out = call(*args, **kwargs)
        self.seconds += time.perf_counter() - t0
        return out

    def reset(self) -> VecEnvObs:
        return self._timed(self.venv.reset)

    def step_async(self, actions: np.ndarray) -> None:
        self._timed(self.venv.step_async, actions)

    def step_wait(self) -> VecEnvStepReturn:
        return self._timed(self.venv.step_wait)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        return self._timed(self.venv.env_method, method_name, *method_args, indices=indices, **method_kwargs)
