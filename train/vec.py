"""Self-play as an SB3 ``VecEnv`` over :func:`nertz_env.vector_env`, one sub-env per learning seat, with
masks (SuperSuit's vector wrappers drop them). See docs/guides/training-sb3.md.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import gymnasium
import numpy as np
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvObs, VecEnvStepReturn

from nertz_env._envbase import Copyable, check_open, warn_unknown_options
from nertz_env.agents import Agent
from nertz_env.agents.policy import PolicyAgent
from nertz_env.agents.pool import OpponentPool
from nertz_env.global_state import state_layout
from nertz_env.single import as_pool, rival_weights, table_rules
from nertz_env.vector import NertzVectorEnv

T = TypeVar("T")


def run_interleaved(
    executor: ThreadPoolExecutor, fn: Callable[[Sequence[T]], None], items: Sequence[T], k: int
) -> None:
    """Call ``fn`` on ``k`` interleaved shares of ``items`` (``items[i::k]``) side by side on ``executor`` and
    wait for them all; an error raised in a share is re-raised here."""
    for future in [executor.submit(fn, items[i::k]) for i in range(k)]:
        future.result()


class NertzVecEnv(Copyable, VecEnv):
    """Learning seats of ``num_tables`` tables as one SB3 ``VecEnv``: every seat learns, or
    ``learners_per_table`` of them against ``opponents`` (a pool, ``{spec: weight}`` or specs); rules as a
    mapping or as keywords. Every argument: docs/guides/training-sb3.md ("The two training environments").
    """

    _derived = ("_executor",)

    def __init__(
        self,
        num_tables: int,
        num_players: int = 4,
        rules: Mapping[str, Any] | None = None,
        learners_per_table: int | None = None,
        opponents: OpponentPool | Mapping[str, float] | Sequence[str] | None = None,
        seed: int | None = None,
        opponent_threads: int = 1,
        privileged_state: bool = False,
        **rule_options: Any,
    ) -> None:
        if isinstance(opponent_threads, bool) or not isinstance(opponent_threads, int) or opponent_threads < 1:
            raise ValueError(f"opponent_threads must be an integer >= 1, got {opponent_threads!r}")
        rules = table_rules(rules, rule_options, "NertzVecEnv")
        self.venv = NertzVectorEnv(num_tables, num_players=num_players, autoreset=False, copy=False, **rules)
        self.config = self.venv.config
        p = self.config.num_players
        n_learn = p if learners_per_table is None else int(learners_per_table)
        if not 1 <= n_learn <= p:
            raise ValueError(
                f"learners_per_table must be from 1 to num_players={p}, got {learners_per_table!r}"
            )
        self.num_tables, self.num_players, self.learners_per_table = int(num_tables), p, n_learn
        self.pool = as_pool(opponents) if n_learn < p else None
        self.render_mode = None
        self.obs_size = self.venv.obs_layout.size
        self.privileged_state = bool(privileged_state)
        self.state_size = state_layout(self.config).size if self.privileged_state else 0
        obs_space = gymnasium.spaces.Box(0.0, 1.0, (self.obs_size + self.state_size,), np.float32)
        act_space: gymnasium.spaces.Discrete = gymnasium.spaces.Discrete(self.venv.actions.n)
        super().__init__(self.num_tables * n_learn, obs_space, act_space)
        self._table = np.repeat(np.arange(self.num_tables, dtype=np.int64), n_learn)  # slot -> table
        self._offset = np.zeros(self.num_tables, dtype=np.int64)
        self._seat = np.tile(np.arange(n_learn, dtype=np.int64), self.num_tables)  # slot -> seat
        self._opponents: list[dict[int, Agent]] = [{} for _ in range(self.num_tables)]
        self._full_actions = np.zeros((self.num_tables, p), dtype=np.int64)
        self._rival_weight = rival_weights(self.config)
        self._pending: np.ndarray | None = None
        self._default_seed = seed
        self._rng = np.random.default_rng()  # drawn from at reset(), which seeds it (and checks the seed)
        self._obs_full: np.ndarray | None = None  # (T, P, O) view of the engine's buffer
        self._mask_full: np.ndarray | None = None  # (T, P, A) view
        self._masks = np.zeros((self.num_envs, self.venv.actions.n), dtype=bool)
        self.episodes = 0
        self.illegal_actions = 0
        self.opponent_threads = opponent_threads
        self._closed = False
        self._bind()

    def _bind(self) -> None:
        self._executor: ThreadPoolExecutor | None = None  # made on first use
        if self._obs_full is not None:  # a copy reads the buffers of its own vector env, never detached ones
            out = self.venv.observations()
            self._obs_full, self._mask_full = out["observation"], out["action_mask"]

    # ------------------------------------------------------------------ seats
    def _seat_table(self, t: int, rotate: bool) -> None:
        """Place table ``t``'s learners (moving them on one seat when ``rotate``) and draw its opponents."""
        p, n_learn = self.num_players, self.learners_per_table
        if n_learn == p:
            return
        if rotate:
            self._offset[t] = (self._offset[t] + 1) % p
        lo = t * n_learn
        seats = (self._offset[t] + np.arange(n_learn)) % p
        self._seat[lo : lo + n_learn] = seats
        assert self.pool is not None
        self._opponents[t] = {}
        for s in np.setdiff1d(np.arange(p), seats).tolist():  # the opponents' seats, in order
            agent = self.pool.new_agent(self.pool.sample(self._rng))
            agent.reset(self.config, s, int(self._rng.integers(2**63)))
            self._opponents[t][s] = agent

    def _gather(self) -> np.ndarray:
        assert self._obs_full is not None and self._mask_full is not None
        self._masks = self._mask_full[self._table, self._seat].astype(bool)
        return self._with_state(self._obs_full[self._table, self._seat], self._table, self._seat)

    def _with_state(self, obs: np.ndarray, table: np.ndarray, seat: np.ndarray) -> np.ndarray:
        """``obs`` (rows of slots at ``table``, ``seat``), with each table's global state appended, seats
        rotated to start at the slot's own, when ``privileged_state``; else ``obs`` itself."""
        if not self.privileged_state:
            return obs
        layout = state_layout(self.config)
        state = self.venv.state()
        p = self.num_players
        order = (seat[:, None] + np.arange(p)) % p  # (n, P): the seats in the slot's order
        cards = layout.cards(state)[table[:, None], order]  # (n, P, D, L + 1)
        status = state[:, layout.slices["status"]].reshape(len(state), p, -1)[table[:, None], order]
        return np.concatenate([obs, cards.reshape(len(obs), -1), status.reshape(len(obs), -1)], axis=1)

    def _opponent_actions(self, out: np.ndarray) -> None:
        """Every opponent's action into ``out`` (T, P); snapshots sharing a network act in one batch."""
        obs, mask = self._obs_full, self._mask_full
        assert obs is not None and mask is not None
        batched: dict[int, list[tuple[int, int, PolicyAgent]]] = {}
        scripted: list[tuple[int, int, Agent]] = []
        for t, seated in enumerate(self._opponents):
            for s, agent in seated.items():
                if isinstance(agent, PolicyAgent) and agent.memory is None:
                    batched.setdefault(id(agent.policy), []).append((t, s, agent))
                else:
                    scripted.append((t, s, agent))

        def act(members: Sequence[tuple[int, int, Agent]]) -> None:
            for t, s, agent in members:
                out[t, s] = agent.act(obs[t, s], mask[t, s])

        k = min(self.opponent_threads, len(scripted))
        if k <= 1:
            act(scripted)
        else:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self.opponent_threads, thread_name_prefix="nertz-opponents")
            # interleaved shares: a table's seats and neighbouring tables' (often the same kind) spread evenly
            run_interleaved(self._executor, act, scripted, k)
        for members in batched.values():
            ts, ss = np.array([m[:2] for m in members]).T
            probs = members[0][2].probabilities(obs[ts, ss], mask[ts, ss])
            for (t, s, agent), row in zip(members, probs, strict=True):
                out[t, s] = agent.choose(row)

    # ------------------------------------------------------------------ VecEnv API
    def reset(self) -> VecEnvObs:
        check_open(self, "reset")
        warn_unknown_options({k: v for opts in self._options for k, v in opts.items()}, ())  # from set_options()
        seed = self._seeds[0] if self._seeds[0] is not None else self._default_seed
        if seed is None:
            seed = int(np.random.SeedSequence().generate_state(1, np.uint64)[0] >> np.uint64(1))
        out, _ = self.venv.reset(seed=seed)  # refuses a seed that is not an integer in range
        self._default_seed = None  # later resets without seed() continue from fresh entropy
        self._obs_full, self._mask_full = out["observation"], out["action_mask"]
        self._rng = np.random.default_rng([seed, 0x5EA7])
        p = self.num_players
        self._offset[:] = np.arange(self.num_tables) % p if self.learners_per_table < p else 0
        for t in range(self.num_tables):
            self._seat_table(t, rotate=False)
        self._reset_seeds()
        self._reset_options()
        return self._gather()

    def step_async(self, actions: np.ndarray) -> None:
        check_open(self, "step")
        acts = np.asarray(actions).reshape(-1)
        if acts.shape != (self.num_envs,) or not np.issubdtype(acts.dtype, np.integer):
            raise ValueError(f"actions must be {self.num_envs} integers (one per slot), got {acts.dtype} {acts.shape}")
        self._pending = acts

    def step_wait(self) -> VecEnvStepReturn:
        if self._pending is None or self._obs_full is None:
            raise RuntimeError("step_wait() without reset() and step_async()")
        acts = self._full_actions
        acts[:] = 0
        acts[self._table, self._seat] = self._pending
        self._pending = None
        if self.learners_per_table < self.num_players:
            self._opponent_actions(acts)
        out, rew, term, trunc, info = self.venv.step(acts)
        self._obs_full, self._mask_full = out["observation"], out["action_mask"]
        table, seat = self._table, self._seat
        rewards = rew[table, seat].astype(np.float32)
        rivals = (rew[table] * self._rival_weight[seat]).sum(axis=1)
        self.illegal_actions += int(info["illegal"][table, seat].sum())
        obs = self._with_state(self._obs_full[table, seat], table, seat)  # a copy, safe from the resets below
        done_table = term[:, 0] | trunc[:, 0]
        dones = done_table[table]
        infos: list[dict[str, Any]] = [{"rivals_reward": float(r)} for r in rivals]
        if done_table.any():
            tables = np.flatnonzero(done_table)
            n_learn = self.learners_per_table
            for t in tables:
                cut = bool(trunc[t, 0])
                for i in range(t * n_learn, (t + 1) * n_learn):
                    s = int(seat[i])
                    infos[i] |= {
                        "terminal_observation": obs[i].copy(),
                        "TimeLimit.truncated": False,
                        "max_ticks": cut,
                        "round_score": int(info["score"][t, s]),
                        "round_end": int(info["round_end"][t]),
                        "seat": s,
                    }
            self.episodes += len(tables)
            self.venv.reset_tables(np.asarray(tables, dtype=np.int64))  # what the next-step autoreset would deal
            for t in tables:
                self._seat_table(int(t), rotate=True)
            slots = np.flatnonzero(done_table[table])
            obs[slots] = self._with_state(self._obs_full[table[slots], seat[slots]], table[slots], seat[slots])
        self._masks = self._mask_full[table, seat].astype(bool)
        return obs, rewards, dones, infos

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown()
            self._executor = None
        self._closed = True
        self.venv.close()

    def action_masks(self) -> np.ndarray:
        """Legal actions of every slot (bool, (N, A))."""
        return self._masks

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        value = getattr(self, attr_name)  # AttributeError when missing, as SB3's has_attr expects
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        setattr(self, attr_name, value)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        idx = list(self._get_indices(indices))
        if method_name == "action_masks":
            return [self._masks[i] for i in idx]
        result = getattr(self, method_name)(*method_args, **method_kwargs)
        return [result for _ in idx]

    def env_is_wrapped(
        self, wrapper_class: type[gymnasium.Wrapper], indices: VecEnvIndices = None
    ) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly: every table (as snapshots), seats, opponents, generator."""
        if self._obs_full is None:
            raise RuntimeError("state_dict() before reset()")
        return {
            "tables": [self.venv.snapshot(t) for t in range(self.num_tables)],
            "offset": self._offset.copy(),
            "seat": self._seat.copy(),
            "rng": pickle.dumps(self._rng),
            "opponents": pickle.dumps(self._opponents),
            "episodes": self.episodes,
            "illegal_actions": self.illegal_actions,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> np.ndarray:
        """Restore :meth:`state_dict`; returns the current observations."""
        if len(state["tables"]) != self.num_tables:
            raise ValueError(f"saved state has {len(state['tables'])} tables, this env has {self.num_tables}")
        out, _ = self.venv.reset(seed=0)
        for t, snap in enumerate(state["tables"]):
            self.venv.restore(t, snap)
        self._obs_full, self._mask_full = out["observation"], out["action_mask"]
        self._offset[:] = state["offset"]
        self._seat[:] = state["seat"]
        self._rng = pickle.loads(state["rng"])
        self._opponents = pickle.loads(state["opponents"])
        self.episodes = int(state["episodes"])
        self.illegal_actions = int(state["illegal_actions"])
        self._default_seed = None
        return self._gather()
