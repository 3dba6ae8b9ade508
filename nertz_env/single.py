"""The single-agent Gymnasium view: one learning seat at a table of opponents drawn from a pool.
See docs/guides/training-sb3.md.
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium
import numpy as np

from nertz_env import render as _render
from nertz_env._envbase import check_open, obs_space, warn_unknown_options
from nertz_env.agents import Agent
from nertz_env.agents.pool import OpponentPool
from nertz_env.config import NertzConfig
from nertz_env.environment import NertzParallelEnv


def rival_weights(config: NertzConfig) -> np.ndarray:
    """(P, P) weights: row ``i`` averages over the seats on other teams than seat ``i`` (every other seat
    without teams), so ``rival_weights(config) @ rewards`` is each seat's rivals' mean reward."""
    team = np.asarray(config.team_of)
    rivals = (team[:, None] != team[None, :]).astype(np.float64)
    return rivals / np.maximum(rivals.sum(axis=1, keepdims=True), 1.0)


def table_rules(rules: Mapping[str, Any] | None, keywords: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The rules options of an env built with ``rules={...}`` or with the options as keywords (``draw=1``,
    as :func:`nertz_env.parallel_env` takes them), refusing both at once and ``num_players`` among them."""
    if rules is not None and not isinstance(rules, Mapping):
        raise TypeError(f"{where}: rules is a mapping of rules options such as {{'draw': 1}}, got {rules!r}")
    if rules and keywords:
        raise ValueError(
            f"{where}: give the rules as keywords ({', '.join(f'{k}=...' for k in keywords)}) or as "
            f"rules={{...}}, not both"
        )
    out = dict(rules or keywords)
    if "num_players" in out:
        raise ValueError("give the table size as num_players, not as a rule")
    return out


def as_pool(opponents: OpponentPool | Mapping[str, float] | Sequence[str] | None) -> OpponentPool:
    """An :class:`OpponentPool` from a pool, a ``{spec: weight}`` mapping or a list of specs (weight 1)."""
    if isinstance(opponents, OpponentPool):
        return opponents
    if opponents is None:
        return OpponentPool()
    if isinstance(opponents, Mapping):
        return OpponentPool(dict(opponents))
    if isinstance(opponents, str):
        return OpponentPool({opponents: 1.0})
    return OpponentPool(dict.fromkeys(opponents, 1.0))


class NertzSingleAgentEnv(gymnasium.Env):
    """One learner against opponents from a pool, a ``gymnasium.Env`` (docs/guides/training-sb3.md, "The
    single-agent view"). The rules are keywords (``draw=1``) or one mapping ``rules={...}``, not both;
    ``opponents`` is an :class:`OpponentPool`, ``{spec: weight}`` or a list of specs (default: heuristic);
    ``seat`` pins the learner (None rotates it).
    """

    metadata = {"render_modes": list(_render.RENDER_MODES), "render_fps": _render.RENDER_FPS}

    def __init__(
        self,
        num_players: int = 4,
        rules: Mapping[str, Any] | None = None,
        opponents: OpponentPool | Mapping[str, float] | Sequence[str] | None = None,
        seat: int | None = None,
        truncation_as_termination: bool = True,
        render_mode: str | None = None,
        **rule_options: Any,
    ) -> None:
        rules = table_rules(rules, rule_options, "NertzSingleAgentEnv")
        self.env = NertzParallelEnv(num_players=num_players, render_mode=render_mode, **rules)
        self.config = self.env.config
        self.render_mode = render_mode
        n = self.config.num_players
        if seat is not None and not (isinstance(seat, (int, np.integer)) and 0 <= seat < n):
            raise ValueError(f"seat must be None (rotate) or a seat from 0 to {n - 1}, got {seat!r}")
        self.fixed_seat = None if seat is None else int(seat)
        self.pool = as_pool(opponents)
        self.truncation_as_termination = bool(truncation_as_termination)
        self.names = list(self.env.possible_agents)
        self._rival_weight = rival_weights(self.config)
        self.observation_space = obs_space(self.env, None)
        self.action_space = gymnasium.spaces.Discrete(self.env.actions.n)
        self.seat = 0
        self.opponents: dict[int, Agent] = {}
        self._episode = 0
        self._offset = 0
        self._obs: dict[str, dict[str, np.ndarray]] = {}
        self._opponent_names: dict[int, str] = {}
        self._closed = False

    # ------------------------------------------------------------------ Gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Deal a new round: the learner's seat (rotating unless pinned) and fresh opponents from the pool.

        Returns the learner's observation and ``{"seat": ..., "opponents": {seat: name}}``."""
        check_open(self, "reset")
        warn_unknown_options(dict(options or {}), ())
        super().reset(seed=seed)
        rng = self.np_random
        n = self.config.num_players
        if seed is not None:
            self._episode = 0
            self._offset = int(rng.integers(n))
        else:
            self._episode += 1
        self.seat = self.fixed_seat if self.fixed_seat is not None else (self._offset + self._episode) % n
        env_seed = int(rng.integers(2**63))
        self.opponents = {}
        for s in range(n):
            if s == self.seat:
                continue
            agent = self.pool.new_agent(self.pool.sample(rng))
            agent.reset(self.config, s, int(rng.integers(2**63)))
            self.opponents[s] = agent
        self._obs, infos = self.env.reset(seed=env_seed)
        me = self.names[self.seat]
        self._opponent_names = {s: a.name for s, a in self.opponents.items()}
        info = dict(infos[me], action_mask=self._obs[me]["action_mask"])
        # a new dict each call: a user (or Gymnasium >= 1.4's check_env) keeps every info it was given
        info.update(seat=self.seat, opponents=dict(self._opponent_names), rivals_reward=0.0, max_ticks=False)
        return self._obs[me]["observation"], info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Play one tick: the learner's ``action`` and every opponent's choice. Returns the learner's five
        Gymnasium values; its infos: :data:`nertz_env.infos.SINGLE` (docs/guides/training-sb3.md)."""
        if not self.env.agents:
            check_open(self, "step")
            raise RuntimeError("step() after the episode ended: call reset()")
        names, obs = self.names, self._obs
        me = names[self.seat]
        actions = {me: self.env._action_of(me, action)}  # a non-integer raises here, before the opponents act
        for s, agent in self.opponents.items():
            o = obs[names[s]]
            actions[names[s]] = agent.act(o["observation"], o["action_mask"])
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        paid = np.array([rewards[name] for name in names], dtype=np.float64)
        rivals = float(self._rival_weight[self.seat] @ paid)
        terminated, truncated = bool(terms[me]), bool(truncs[me])
        cut = truncated and self.truncation_as_termination
        if cut:
            terminated, truncated = True, False
        info = dict(infos[me], action_mask=obs[me]["action_mask"])
        info.update(seat=self.seat, opponents=dict(self._opponent_names), rivals_reward=rivals, max_ticks=cut)
        self._obs = {} if terminated or truncated else obs  # the final step still returns every observation
        return obs[me]["observation"], float(rewards[me]), terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions (bool, (A,)); all False once the episode is over."""
        if not self._obs:
            return np.zeros(self.env.actions.n, dtype=bool)
        return self._obs[self.names[self.seat]]["action_mask"].astype(bool)

    def render(self, mode: str | None = None) -> Any:
        """The table in ``mode`` (default: the env's ``render_mode``), as :meth:`NertzParallelEnv.render`."""
        return self.env.render(mode)

    def close(self) -> None:
        """``step`` and ``reset`` raise from now on."""
        self._closed = True
        self.env.close()

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly: the table, the seat, the opponents and the generator."""
        return {
            "snapshot": self.env.snapshot() if self.env.agents else None,
            "np_random": pickle.dumps(self.np_random),
            "episode": self._episode,
            "offset": self._offset,
            "seat": self.seat,
            "opponents": pickle.dumps(self.opponents),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`state_dict` saved, so the env continues exactly."""
        self._np_random = pickle.loads(state["np_random"])
        self._episode = int(state["episode"])
        self._offset = int(state["offset"])
        self.seat = int(state["seat"])
        self.opponents = pickle.loads(state["opponents"])
        self._opponent_names = {s: a.name for s, a in self.opponents.items()}
        if state["snapshot"] is not None:
            self._obs, _ = self.env.reset(options={"snapshot": state["snapshot"]})
        else:
            self._obs = {}
