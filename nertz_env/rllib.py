"""Nertz for Ray RLlib: a multi-agent env with RLlib's action-mask keys, a PPO config, a league, checkpoints.

Guide, with every ``env_config`` key and what :func:`ppo_config`'s batch sizes count: docs/guides/rllib.md;
infos: :data:`nertz_env.infos.RLLIB`. Needs the ``rllib`` extra (``import nertz_env`` never imports Ray).
"""
from __future__ import annotations

import json
import os
import time
import types
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium
import numpy as np
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.connectors.module_to_env import UnBatchToIndividualItems
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.env.multi_agent_env import MultiAgentEnv
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner
from ray.rllib.utils.spaces.space_utils import unbatch

from nertz_env._rllib_spec import (
    LEARNER,
    LEARNER_MODULE_DIR,
    SNAPSHOT_PREFIX,
    EnvSpec,
    League,
    parse_env_config,
)
from nertz_env.agent_vector import NertzAgentVectorEnv
from nertz_env.agents import make_agent
from nertz_env.agents.meta import make_meta
from nertz_env.agents.rllib_policy import META_FILE
from nertz_env.config import NertzConfig
from nertz_env.render import render_text
from nertz_env.threads import limit_threads
from nertz_env.vector import NertzVectorEnv

# the parts without Ray live in _rllib_spec (nertz-train checks options before importing Ray); documented here
EnvSpec.__module__ = League.__module__ = parse_env_config.__module__ = __name__


def _obs_space(size: int, actions: int) -> gymnasium.spaces.Dict:
    """An agent's observation space: RLlib's action-mask keys, both float32."""
    return gymnasium.spaces.Dict(
        {
            "observations": gymnasium.spaces.Box(0.0, 1.0, (size,), np.float32),
            "action_mask": gymnasium.spaces.Box(0.0, 1.0, (actions,), np.float32),
        }
    )


class NertzRLlibEnv(MultiAgentEnv):
    """Nertz as an RLlib ``MultiAgentEnv`` over ``num_tables`` batched tables. ``config``: the ``env_config``
    (docs/guides/rllib.md; RLlib passes an ``EnvContext``). ``render_mode="ansi"``: ``render()`` is text."""

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(self, config: Mapping[str, Any] | None = None, render_mode: str | None = None) -> None:
        super().__init__()
        limit_threads(1)  # env runners import torch before building the env: one thread per process
        self.env_spec = parse_env_config(config)
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.render_mode = render_mode
        s = self.env_spec
        self.config = s.config
        self.num_tables = s.num_tables
        n = self.config.num_players
        self._venv = NertzVectorEnv(s.num_tables, autoreset=False, copy=False, **self.config.to_dict())
        obs_space = _obs_space(self._venv.obs_layout.size, self._venv.actions.n)
        act_space: gymnasium.spaces.Space = gymnasium.spaces.Discrete(self._venv.actions.n)
        prefix = [f"t{t}_" if s.num_tables > 1 else "" for t in range(s.num_tables)]  # t{k}_player_{i}, or player_{i}
        self._index = {f"{prefix[t]}player_{p}": (t, p) for t in range(s.num_tables) for p in range(n)}
        self.possible_agents = list(self._index)
        self.agents: list[str] = []
        self.observation_spaces = dict.fromkeys(self.possible_agents, obs_space)
        self.action_spaces = dict.fromkeys(self.possible_agents, act_space)
        # the league: per table and seat, None (exposed to RLlib) or a scripted agent playing inside
        self._specs = list(s.opponents)
        w = np.array([s.opponents[k] for k in self._specs] + [s.module_opponents], dtype=np.float64)
        self._draw_p = w / w.sum() if w.sum() > 0 else w
        self._agents_cache: dict[tuple[int, int, str], Any] = {}
        self._scripted: list[list[Any]] = [[None] * n for _ in range(s.num_tables)]
        self._rng = np.random.default_rng(s.seed)
        self._started = False
        self._acts = np.zeros((s.num_tables, n), dtype=np.int64)
        self._live_tables = np.zeros(s.num_tables, dtype=bool)
        #: wall seconds spent inside ``step`` (engine and scripted opponents), for throughput reports
        self.step_seconds = 0.0

    # ------------------------------------------------------------------ MultiAgentEnv API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, dict[str, Any]]]:
        """Deal every table. ``seed`` fixes the deals (table k gets ``seed + k``) and the opponent draws;
        without it the tables continue their own generators."""
        if options:
            raise ValueError(f"reset takes no options, got {sorted(options)}")
        if seed is not None:
            self._venv.reset(seed=seed)  # refuses a seed that is not an integer in range
            self._rng = np.random.default_rng([int(seed), self.env_spec.seed or 0])
        elif not self._started:
            self._venv.reset(seed=self.env_spec.seed)
        else:
            self._venv.reset_tables(range(self.num_tables))  # each from its own generator
        self._started = True
        self._seat_opponents()
        self._live_tables[:] = True
        # RLlib sees the seats no scripted agent plays
        self.agents = [a for a, (t, p) in self._index.items() if self._scripted[t][p] is None]
        none = {"illegal": False, "lost_race": False, "round_end": 0, "score": 0}  # the info schema's "none yet"
        return self._obs(self.agents), {a: dict(none) for a in self.agents}

    def step(self, action_dict: Mapping[str, Any]) -> tuple[
        dict[str, dict[str, np.ndarray]],
        dict[str, float],
        dict[str, bool],
        dict[str, bool],
        dict[str, dict[str, Any]],
    ]:
        """One tick on every live table: the exposed agents' actions plus the scripted seats' own."""
        if not self.agents:
            raise RuntimeError("step() called with no live agents: call reset() first")
        t0 = time.perf_counter()
        acts = self._acts
        acts.fill(-1)  # a wait for every seat not named (finished tables, missing agents)
        index = self._index
        for agent, a in action_dict.items():
            t, p = index[agent]
            acts[t, p] = int(a)
        views = self._venv.observations()  # read-only: a scripted agent cannot change the engine's mask
        obs_all, mask_all = views["observation"], views["action_mask"]
        for t in np.flatnonzero(self._live_tables).tolist():
            for p, agent in enumerate(self._scripted[t]):
                if agent is not None:
                    acts[t, p] = agent.act(obs_all[t, p], mask_all[t, p])
        _, rewards, term, trunc, infos = self._venv.step(acts)
        illegal, lost, score = infos["illegal"], infos["lost_race"], infos["score"]
        ends = infos["round_end"].tolist()
        was_live = self.agents
        obs = self._obs(was_live)
        rew = {a: float(rewards[index[a]]) for a in was_live}
        terms = {a: bool(term[index[a]]) for a in was_live}
        truncs = {a: bool(trunc[index[a]]) for a in was_live}
        info = {a: {"illegal": bool(illegal[t, p]), "lost_race": bool(lost[t, p]), "round_end": ends[t],
                    "score": int(score[t, p]) if ends[t] else 0} for a in was_live for t, p in [index[a]]}
        ended = [index[a][0] for a in was_live if terms[a] or truncs[a]]
        if ended:
            self._live_tables[ended] = False
            self.agents = [a for a in was_live if self._live_tables[index[a][0]]]
        all_done = not self._live_tables.any()
        terms["__all__"] = all_done and not any(truncs.values())
        truncs["__all__"] = all_done and not terms["__all__"]
        self.step_seconds += time.perf_counter() - t0
        return obs, rew, terms, truncs, info

    def render(self, mode: str | None = None) -> str | None:
        """Every table as text (``mode``: ``None`` or ``"ansi"``; RLlib passes one)."""
        if mode not in (None, "ansi"):
            raise ValueError(f"render supports 'ansi' (text) only, got {mode!r}")
        if not self._started:
            return "(no deal yet: call reset())"
        return "\n\n".join(
            (f"table {t}\n" if self.num_tables > 1 else "") + render_text(self._venv.snapshot(t))
            for t in range(self.num_tables)
        )

    # ------------------------------------------------------------------ helpers
    def _seat_opponents(self) -> None:
        """Draw each opponent seat's player for this deal: a scripted agent, or None (RLlib's mapping decides)."""
        s = self.env_spec
        for t in range(s.num_tables):
            for p in range(s.learners, self.config.num_players):  # no draw when every seat learns
                k = int(self._rng.choice(len(self._draw_p), p=self._draw_p))
                if k == len(self._specs):  # a frozen module's seat
                    self._scripted[t][p] = None
                    continue
                key = (t, p, self._specs[k])
                if key not in self._agents_cache:
                    self._agents_cache[key] = make_agent(key[2])
                agent = self._agents_cache[key]
                agent.reset(self.config, p, seed=int(self._rng.integers(2**63)))
                self._scripted[t][p] = agent

    def _obs(self, agents: Sequence[str]) -> dict[str, dict[str, np.ndarray]]:
        now = self._venv.observations()
        o, m = now["observation"].copy(), now["action_mask"].astype(np.float32)
        return {a: {"observations": o[t, p], "action_mask": m[t, p]} for a in agents for t, p in [self._index[a]]}


class NertzRLlibVectorEnv(NertzAgentVectorEnv):
    """Shared-policy self-play for RLlib's single-agent env runner: every seat of ``num_tables`` tables is
    one sub-environment of a Gymnasium vector env (``ppo_config(..., single_agent=True)``; the guide)."""

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        limit_threads(1)
        cfg = dict(config or {})
        num_envs = cfg.pop("num_envs", None)
        spec = parse_env_config(cfg)
        if spec.learners < spec.config.num_players:
            raise ValueError("NertzRLlibVectorEnv is shared-policy self-play: leave learners_per_table unset")
        p = spec.config.num_players
        tables = spec.num_tables if num_envs is None else int(num_envs) // p
        if num_envs is not None and (int(num_envs) % p or tables < 1):
            raise ValueError(f"num_envs ({num_envs}) must be a positive multiple of num_players ({p}): a sub-env is a seat")
        super().__init__(tables, copy=False, **spec.config.to_dict())
        self.single_observation_space = _obs_space(self.venv.obs_layout.size, self.venv.actions.n)
        self.observation_space = gymnasium.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self._seed = spec.seed
        #: wall seconds spent inside ``step`` (the engine), for throughput reports
        self.step_seconds = 0.0

    def _flat_infos(self, out: dict[str, np.ndarray], info: dict[str, np.ndarray]) -> tuple[Any, dict[str, Any]]:
        """Each seat's observation under RLlib's action-mask keys; no infos (the single-agent route reads none)."""
        obs, _ = super()._flat_infos(out, info)
        return {"observations": obs["observation"].copy(), "action_mask": obs["action_mask"].astype(np.float32)}, {}

    def reset(
        self, *, seed: int | Sequence[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        out = super().reset(seed=self._seed if seed is None else seed, options=options)
        self._seed = None  # later resets without a seed continue the tables' own generators
        return out

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        t0 = time.perf_counter()
        out = super().step(actions)
        self.step_seconds += time.perf_counter() - t0
        return out


#: RLlib's env-creator convention (``register_env("nertz", env_creator)``): :class:`NertzRLlibEnv` itself
env_creator = NertzRLlibEnv


# ---------------------------------------------------------------------------------------------------------
# self-play and the league
def self_play_mapping(agent_id: Any, episode: Any = None, **kwargs: Any) -> str:
    """Every seat plays the shared learner module."""
    return LEARNER


class league_mapping:
    """Policy mapping of a league: learner seats map to ``"learner"``, the opponent seats RLlib sees to a
    snapshot drawn uniformly (a new draw per episode and agent)."""

    def __init__(self, learners_per_table: int, snapshot_ids: Sequence[str]) -> None:
        self.learners = int(learners_per_table)
        self.snapshots = list(snapshot_ids)

    def __call__(self, agent_id: Any, episode: Any = None, **kwargs: Any) -> str:
        if int(str(agent_id).rsplit("_", 1)[1]) < self.learners or not self.snapshots:  # the agent's seat
            return LEARNER
        key = f"{getattr(episode, 'id_', '')}/{agent_id}".encode()
        return self.snapshots[zlib.crc32(key) % len(self.snapshots)]  # the same in every process


class NertzPPOConfig(PPOConfig):
    """RLlib's ``PPOConfig`` without its check that ``minibatch_size`` (transitions) is at most
    ``train_batch_size`` (env steps): with many tables per env step the units differ, so sound configs failed.
    (Counting agent steps instead fails in RLlib 2.60 when tables finish at different ticks.)"""

    minibatch_size: int | None  # PPOConfig's attribute, declared for mypy (Ray is not analysed)

    def validate(self) -> None:
        minibatch = self.minibatch_size
        self.minibatch_size = None
        try:
            super().validate()
        finally:
            self.minibatch_size = minibatch


#: nertz-env's values of ``PPOConfig.training``'s options in :func:`ppo_config` (its keywords override them)
TRAINING: dict[str, Any] = {"minibatch_size": 512, "num_epochs": 4, "lr": 3e-4, "gamma": 0.995,
                            "lambda_": 0.95, "clip_param": 0.2, "entropy_coeff": 0.01, "vf_loss_coeff": 0.5,
                            "grad_clip": 0.5}


def ppo_config(
    env_config: Mapping[str, Any] | None = None,
    *,
    league: League | None = None,
    num_env_runners: int = 0,
    num_envs_per_env_runner: int = 1,
    rollout_fragment_length: int | str = "auto",
    train_batch_size: int = 4000,
    hidden: Sequence[int] = (256, 256),
    seed: int | None = 0,
    single_agent: bool = False,
    fast_sampling: bool = False,
    **training: Any,
) -> Any:
    """A ready ``PPOConfig``: the Nertz env, RLlib's ``ActionMaskingTorchRLModule``, shared-policy self-play
    (every seat is ``"learner"``) or, with ``league``, snapshots and scripted opponents. ``env_config`` is
    checked now (``ValueError`` before Ray starts); ``training``: ``PPOConfig.training``'s options over
    :data:`TRAINING`. The batch sizes' units, ``single_agent``, ``fast_sampling``: docs/guides/rllib.md."""
    # imported here: the module logs an RLlib deprecation warning when imported
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule

    env_cfg = dict(env_config or {})
    if fast_sampling and not single_agent:
        raise ValueError("fast_sampling=True speeds up the single-agent route: pass single_agent=True too")
    if single_agent and num_envs_per_env_runner != 1:
        raise ValueError(
            "single_agent=True: every seat of num_tables tables is a sub-environment already; give num_tables "
            "in env_config and leave num_envs_per_env_runner at 1"
        )
    if league is not None:
        clash = sorted(set(env_cfg) & set(league.env_keys()))
        if clash:
            raise ValueError(f"give {clash} through the League, not env_config")
        env_cfg.update(league.env_keys())
    spec = parse_env_config(env_cfg)
    if single_agent:
        if spec.learners < spec.config.num_players:
            raise ValueError("single_agent=True is shared-policy self-play: a league, or learners_per_table, needs "
                             "the multi-agent env")
        config = (
            (FastSamplingPPOConfig() if fast_sampling else PPOConfig())
            .environment(env=NertzRLlibVectorEnv)
            .env_runners(num_envs_per_env_runner=spec.num_tables * spec.config.num_players,
                         gym_env_vectorize_mode="vector_entry_point")
        )
    else:
        module_ids = [LEARNER] + (league.snapshot_ids if league else [])
        mapping = league_mapping(league.learners_per_table, league.snapshot_ids) if league else self_play_mapping
        config = (
            NertzPPOConfig()
            .environment(env=NertzRLlibEnv)
            .env_runners(num_envs_per_env_runner=num_envs_per_env_runner)
            .multi_agent(policies=set(module_ids), policy_mapping_fn=mapping, policies_to_train=[LEARNER])
        )
    model_config = {"fcnet_hiddens": list(hidden), "fcnet_activation": "relu", "head_fcnet_hiddens": []}
    return (
        # Discrete actions: RLlib's action normalizing would only cost time
        config.environment(env_config=env_cfg, disable_env_checking=True, normalize_actions=False)
        .env_runners(num_env_runners=num_env_runners, rollout_fragment_length=rollout_fragment_length)
        # one spec: on the multi-agent env RLlib builds every module id's module from it
        .rl_module(rl_module_spec=RLModuleSpec(module_class=ActionMaskingTorchRLModule, model_config=model_config))
        .learners(num_learners=0)
        .training(train_batch_size_per_learner=train_batch_size, **{**TRAINING, **training})
        .debugging(seed=seed)
    )


# ---------------------------------------------------------------------------------------------------------
# fast sampling on the single-agent route: opt in with ppo_config(..., fast_sampling=True)
def fast_unbatch(struct: Any) -> Any:
    """RLlib's ``space_utils.unbatch`` with fast paths for a flat array and a dict of flat arrays (same result)."""
    if isinstance(struct, np.ndarray):
        return list(struct)
    if isinstance(struct, dict) and struct and all(isinstance(v, np.ndarray) for v in struct.values()):
        keys = list(struct)
        return [dict(zip(keys, row, strict=True)) for row in zip(*(struct[k] for k in keys), strict=True)]
    return unbatch(struct)


def _with_fast_unbatch(method: Any, name: str = "unbatch") -> Any:
    """A copy of RLlib's ``method`` calling :func:`fast_unbatch` where it calls the global ``name`` (RLlib's
    ``unbatch``, which splits rows with a ``tree.unflatten_as`` each); RLlib's module stays as it is. A Ray whose
    method calls no such name keeps its method (a test checks the copy is made with the pinned Ray)."""
    if name not in method.__code__.co_names:
        return method
    copy = types.FunctionType(method.__code__, {**method.__globals__, name: fast_unbatch}, method.__name__,
                              method.__defaults__, method.__closure__)
    copy.__kwdefaults__, copy.__qualname__ = method.__kwdefaults__, method.__qualname__
    return copy


class FastSamplingEnvRunner(SingleAgentEnvRunner):
    """RLlib's single-agent env runner; its sampling loop and reset split rows with :func:`fast_unbatch`."""

    _sample = _with_fast_unbatch(SingleAgentEnvRunner._sample)
    _reset_envs = _with_fast_unbatch(SingleAgentEnvRunner._reset_envs)


class FlatUnBatchToIndividualItems(UnBatchToIndividualItems):
    """RLlib's ``UnBatchToIndividualItems``, splitting rows with :func:`fast_unbatch`."""

    __call__ = _with_fast_unbatch(UnBatchToIndividualItems.__call__, "unbatch_fn")


class FastSamplingPPOConfig(PPOConfig):
    """RLlib's ``PPOConfig`` with :class:`FastSamplingEnvRunner` and :class:`FlatUnBatchToIndividualItems`."""

    def __init__(self, algo_class: Any = None) -> None:
        super().__init__(algo_class)
        self.env_runner_cls = FastSamplingEnvRunner

    def build_module_to_env_connector(self, env: Any = None, spaces: Any = None) -> Any:
        """RLlib's pipeline with its unbatch piece swapped for :class:`FlatUnBatchToIndividualItems` (same items)."""
        pipeline = super().build_module_to_env_connector(env, spaces)
        for i, piece in enumerate(pipeline.connectors):
            if type(piece) is UnBatchToIndividualItems:
                pipeline.connectors[i] = FlatUnBatchToIndividualItems(
                    piece.input_observation_space, piece.input_action_space)
        return pipeline


def add_snapshot(algo: Any, slot: int) -> str:
    """Copy the learner's weights into the frozen module ``snapshot_{slot}``; returns the module id."""
    module_id = f"{SNAPSHOT_PREFIX}{slot}"
    learner = algo.learner_group
    state = learner.get_state(components=f"learner/rl_module/{LEARNER}")
    weights = state["learner"]["rl_module"][LEARNER]
    learner.set_state({"learner": {"rl_module": {module_id: weights}}})
    algo.env_runner_group.sync_weights(
        from_worker_or_learner_group=learner, policies=[module_id], inference_only=True
    )
    return module_id


# ---------------------------------------------------------------------------------------------------------
# checkpoints
def checkpoint_meta(config: NertzConfig, learner_module: str = LEARNER_MODULE_DIR, **extra: Any) -> dict[str, Any]:
    """The nertz-env record of an RLlib checkpoint; ``learner_module``: the learner module's directory in it."""
    return {**make_meta(config, **extra), "algorithm": "RLlib PPO", "learner_module": learner_module}


def save_checkpoint(algo: Any, path: str, **extra: Any) -> str:
    """``algo.save_to_path(path)`` plus ``nertz_meta.json`` (rules, size, layout) beside it. Returns ``path``."""
    path = os.path.abspath(path)
    algo.save_to_path(path)
    spec = parse_env_config(algo.config.env_config)
    single = os.path.join("learner_group", "learner", "rl_module", DEFAULT_MODULE_ID)  # single-agent route
    module = LEARNER_MODULE_DIR if algo.config.is_multi_agent else single
    with open(os.path.join(path, META_FILE), "w", encoding="utf-8") as f:
        json.dump(checkpoint_meta(spec.config, module, **extra), f, indent=2, sort_keys=True)
        f.write("\n")
    return path
