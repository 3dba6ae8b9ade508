"""The per-agent view of a batch: one Gymnasium sub-environment per seat, for Gymnasium's vector wrappers.

Guide: docs/guides/vector-envs.md; the infos schema and the wrappers that work: docs/env/api.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np

from nertz_env._envbase import check_open, obs_space, warn_unknown_options
from nertz_env._text import short
from nertz_env.config import Rules, Unpack
from nertz_env.vector import NertzVectorEnv


class NertzAgentVectorEnv(gymnasium.vector.VectorEnv):
    """Every seat of ``num_tables`` tables as its own sub-environment of a ``gymnasium.vector.VectorEnv``:
    sub-environment ``i`` is seat ``env_seat[i]`` of table ``env_table[i]``, infos
    :data:`nertz_env.infos.AGENT_VECTOR`. The arguments are :class:`NertzVectorEnv`'s (autoreset always on) and
    ``obs_format``, ``"dict"`` or ``"array"`` (the vector alone): docs/guides/vector-envs.md."""

    metadata = NertzVectorEnv.metadata  # the batch's autoreset mode and render modes

    def __init__(
        self,
        num_tables: int,
        num_players: int = 4,
        *,
        copy: bool = True,
        render_mode: str | None = None,
        obs_format: str = "dict",
        **rules: Unpack[Rules],
    ) -> None:
        if obs_format not in ("dict", "array"):
            raise ValueError(f"obs_format must be 'dict' or 'array', got {short(obs_format)}")
        self.obs_format = obs_format
        self.venv = NertzVectorEnv(
            num_tables, num_players=num_players, autoreset=True, copy=copy, render_mode=render_mode, **rules
        )
        self.config = self.venv.config
        self.render_mode = render_mode
        t, p = self.venv.num_tables, self.venv.num_players
        self.num_tables, self.num_players = t, p
        self.num_envs = t * p
        self.env_table = np.repeat(np.arange(t), p)
        self.env_seat = np.tile(np.arange(p), t)
        self.single_observation_space = obs_space(self.venv, "observation" if obs_format == "dict" else None)
        self.single_action_space = gymnasium.spaces.Discrete(self.venv.actions.n)
        self.observation_space = gymnasium.vector.utils.batch_space(
            self.single_observation_space, self.num_envs
        )
        self.action_space = gymnasium.vector.utils.batch_space(self.single_action_space, self.num_envs)
        #: the global state of one table and of the batch, ``(tables, S)`` (see :meth:`state`)
        self.single_state_space = self.venv.single_state_space
        self.state_space = self.venv.state_space
        self._closed = False

    def reset(
        self, *, seed: int | Sequence[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Deal every table (``seed`` as in :meth:`NertzVectorEnv.reset`: an int, one per table, or None).
        ``options={"reset_mask": mask}`` (bool, (N,), equal for the seats of a table) deals only those tables."""
        check_open(self, "reset")
        options = dict(options or {})
        warn_unknown_options(options, ("reset_mask",))
        if "reset_mask" in options:
            mask = np.asarray(options["reset_mask"])
            if mask.shape != (self.num_envs,) or mask.dtype != np.bool_:
                raise ValueError(
                    f"reset_mask must be a bool array of shape ({self.num_envs},), got {mask.shape}"
                )
            by_table = mask.reshape(self.num_tables, self.num_players)
            if not (by_table == by_table[:, :1]).all():
                raise ValueError(
                    "reset_mask must be the same for every seat of a table: the seats are dealt together"
                )
            options["reset_mask"] = by_table[:, 0].copy()
        out, info = self.venv.reset(seed=seed, options=options)
        return self._flat_infos(out, info)

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One tick on every table; ``actions``: integers of shape (N,), one per seat."""
        check_open(self, "step")
        acts = np.asarray(actions)
        if acts.shape != (self.num_envs,):
            raise ValueError(f"actions must have shape (num_envs,) = ({self.num_envs},), got {acts.shape}")
        out, rew, term, trunc, info = self.venv.step(acts.reshape(self.num_tables, self.num_players))
        n = self.num_envs
        obs, infos = self._flat_infos(out, info)
        return obs, rew.reshape(n), term.reshape(n), trunc.reshape(n), infos

    def _flat_infos(
        self, out: dict[str, np.ndarray], info: dict[str, np.ndarray]
    ) -> tuple[Any, dict[str, np.ndarray]]:
        """The batch's observations and infos, per sub-environment."""
        n, p = self.num_envs, self.num_players
        obs = {
            "observation": out["observation"].reshape(n, -1),
            "action_mask": out["action_mask"].reshape(n, -1),
        }
        infos = {
            "illegal": info["illegal"].reshape(n),
            "lost_race": info["lost_race"].reshape(n),
            "round_end": np.repeat(info["round_end"], p),
            "score": info["score"].reshape(n),
            "_score": np.repeat(info["round_end"] > 0, p),
            "autoreset": np.repeat(info["autoreset"], p),
            "action_mask": obs["action_mask"],
        }
        return (obs if self.obs_format == "dict" else obs["observation"]), infos

    def render(self, tables: Sequence[int] | None = None) -> tuple[Any, ...] | None:
        """One frame per table (of ``tables``, default all), as :meth:`NertzVectorEnv.render`."""
        return self.venv.render(tables)

    def close_extras(self, **kwargs: Any) -> None:
        self._closed = True
        venv = getattr(self, "venv", None)  # absent when __init__ refused its arguments
        if venv is not None:
            venv.close()

    def state(self) -> np.ndarray:
        """Every table's global state, float32 ``(tables, S)`` (:meth:`NertzVectorEnv.state`); a
        sub-environment's is row ``env_table[i]``, so ``state()[env_table]`` is ``(N, S)``."""
        return self.venv.state()

    def action_masks(self) -> np.ndarray:
        """Every sub-environment's legal actions (bool, (N, A))."""
        return self.venv.observations()["action_mask"].reshape(self.num_envs, -1).astype(bool)


agent_vector_env = NertzAgentVectorEnv  # the factory, named as parallel_env is
