"""The PettingZoo adapters: ``parallel_env`` (the native form), ``env`` and ``raw_env`` (AEC forms).

The class maps agent names ``player_0 .. player_{n-1}`` to seats and packs ``{"observation",
"action_mask"}``; the rules live in :mod:`nertz_env.engine`, rendering in :mod:`nertz_env.render`.
Actions, observations, infos, ``obs_key`` and the client conventions: docs/env/api.md and docs/env/nertz.md.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import gymnasium
import numpy as np
from pettingzoo import ParallelEnv
from pettingzoo.utils.conversions import parallel_to_aec_wrapper
from pettingzoo.utils.env_logger import EnvLogger
from pettingzoo.utils.wrappers import OrderEnforcingWrapper

from nertz_env import render as _render
from nertz_env._envbase import Copyable, check_open, obs_space, table_seeds, warn_unknown_options
from nertz_env._text import short
from nertz_env.actions import ActionTable, action_table
from nertz_env.config import NertzConfig, Rules, Unpack, is_int, make_config
from nertz_env.engine import batch
from nertz_env.engine.rules import step_block
from nertz_env.engine.state import DONE_NO, DONE_TRUNCATED, PARAMETERS, TableState, allocate
from nertz_env.global_state import state_layout, state_space
from nertz_env.infos import no_event_infos
from nertz_env.observation import obs_layout
from nertz_env.snapshot import restore_table, snapshot_table


def _as_action(agent: str, value: Any) -> int | None:
    """An action value as an int (None stays None); non-integers raise a ValueError naming the agent."""
    if value is None:
        return None
    if is_int(value):
        return int(value)
    if isinstance(value, np.ndarray) and value.size == 1 and np.issubdtype(value.dtype, np.integer):
        return int(value.reshape(()))
    raise ValueError(f"action for {agent!r} must be an integer action index, got {short(value)}")


class NertzParallelEnv(Copyable, ParallelEnv):
    """Nertz for 2 to 8 players, all acting every tick, as a PettingZoo ``ParallelEnv`` (docs/env/nertz.md).

    The keywords (docs/env/nertz.md, "Arguments"): ``num_players`` (default 4), ``render_mode``,
    ``illegal_action`` (``"noop"``, a flagged wait, or ``"raise"``), ``max_cycles`` (PettingZoo's ``max_ticks``),
    ``obs_key`` (where the mask goes) and every option of :class:`~nertz_env.Rules`; any other raises ``ValueError``.
    """

    metadata = {
        "render_modes": list(_render.RENDER_MODES),
        "name": "nertz_v0",
        "is_parallelizable": True,
        "render_fps": _render.RENDER_FPS,
    }
    _derived = ("_step_table", "_table", "_action_row")

    def __init__(
        self,
        num_players: int = 4,
        render_mode: str | None = None,
        illegal_action: str = "noop",
        max_cycles: int | None = None,
        obs_key: str | None = "observation",
        **rules: Unpack[Rules],
    ) -> None:
        _render.check_mode(render_mode)
        if illegal_action not in ("noop", "raise"):
            raise ValueError(f"illegal_action must be 'noop' or 'raise', got {short(illegal_action)}")
        if not isinstance(obs_key, (str, type(None))) or obs_key not in ("observation", "observations", None):
            raise ValueError(f"obs_key must be 'observation', 'observations' or None, got {short(obs_key)}")
        self.obs_key = obs_key
        if max_cycles is not None:  # PettingZoo's name for max_ticks, for a one-round episode
            if not is_int(max_cycles) or max_cycles < 1:
                raise ValueError(f"max_cycles must be a positive integer, got {short(max_cycles)}")
            if rules.get("max_ticks") is not None:
                raise ValueError(
                    "give max_cycles or max_ticks, not both (max_cycles is PettingZoo's name for max_ticks)"
                )
            if rules.get("rounds") not in (None, 1) or rules.get("target_score") is not None:
                raise ValueError(
                    "max_cycles bounds an episode's steps, but this episode is a match of several rounds; "
                    "bound each round with max_ticks instead"
                )
            rules["max_ticks"] = int(max_cycles)
        self.config: NertzConfig = make_config(num_players=num_players, **rules)
        self.render_mode = render_mode
        self.illegal_action = illegal_action
        self.actions: ActionTable = action_table(self.config)
        self.obs_layout = obs_layout(self.config)
        n = self.config.num_players
        self.possible_agents = [f"player_{i}" for i in range(n)]
        self.agents: list[str] = []
        self._seat = {a: i for i, a in enumerate(self.possible_agents)}
        self.observation_spaces = dict.fromkeys(self.possible_agents, obs_space(self, self.obs_key))
        self.action_spaces: dict[str, gymnasium.spaces.Space] = {
            a: gymnasium.spaces.Discrete(self.actions.n) for a in self.possible_agents
        }
        #: PettingZoo's global state space: ``Box(0, 1, (S,), float32)`` (see :meth:`state`)
        self.state_space = state_space(self.config)
        self._state = allocate(self.config, 1)
        self._actions = np.zeros((1, n), dtype=np.int64)
        self._seeded = False
        self._closed = False
        self._no_event: list[dict[str, Any]] = []  # each seat's infos with no event (its match score changes)
        # the live agents whenever any are: all seats play to the end
        self._live = frozenset(self.possible_agents)
        self._num_actions = self.actions.n
        self._bind()

    def _bind(self) -> None:
        # the compiled step without numba's per-call type dispatch, and table 0's rows as views (flags as bools)
        state = self._state
        self._step_table = batch.bound(step_block, state, self._actions, False, 0, 1)
        rows = TableState._make(a if k in PARAMETERS else a[0, ...] for k, a in state._asdict().items())
        self._table = rows._replace(
            illegal=rows.illegal.view(np.bool_), lost_race=rows.lost_race.view(np.bool_)
        )
        self._action_row = self._actions[0]

    # ------------------------------------------------------------------ PettingZoo API
    def observation_space(self, agent: str) -> gymnasium.spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> gymnasium.spaces.Space:
        return self.action_spaces[agent]

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """Deal a new episode, or restore ``options={"snapshot": s}``. ``seed`` fixes the deal and every tick's
        order; without one the table's own generator continues (from OS entropy the first time)."""
        check_open(self, "reset")
        options = dict(options or {})
        warn_unknown_options(options, ("snapshot",))
        seeds = None if seed is None and self._seeded else table_seeds(seed, 1)
        if "snapshot" in options:
            restore_table(self._state, self.config, options["snapshot"])
        else:  # without seeds the table's own generator continues, exactly as a batch table's autoreset does
            batch.reset(self._state, seeds)
        self._seeded = True
        self.agents = self.possible_agents[:] if self._state.done[0] == DONE_NO else []
        obs, masks = self._observations()
        self._no_event = [no_event_infos(m) for m in self._table.match_score.tolist()]
        infos = {a: info.copy() for a, info in zip(self.agents, self._no_event)}  # noqa: B905
        if self.obs_key is None:  # the mask goes to the infos only when the observation holds none
            for a, mask in zip(self.agents, masks):  # noqa: B905
                infos[a]["action_mask"] = mask
        if self.render_mode == "human":
            self.render()
        return obs, infos

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict[str, float], dict, dict, dict[str, dict]]:
        """One tick: every live agent's action, applied in this tick's seeded order."""
        agents = self.agents
        if not agents:
            check_open(self, "step")
            raise RuntimeError("step() with no live agents: the episode is over (or reset() was not called)")
        if not isinstance(actions, dict):
            raise ValueError(f"actions must be a dict of agent name -> action, got {type(actions).__name__}")
        n_act = self._num_actions
        row = self._action_row
        missing: Collection[str] = ()
        if self.illegal_action == "noop" and actions.keys() == self._live:
            # the common case: every live agent named once; the compiled step checks legality
            seat = self._seat
            for agent, value in actions.items():
                a = value if type(value) is int else _as_action(agent, value)
                row[seat[agent]] = -1 if a is None or not 0 <= a < n_act else a
        else:
            missing = self._checked_row(actions, row)
        state = self._state
        self._step_table(state, self._actions, False, 0, 1)
        obs, masks = self._observations()
        done = state.done.item(0)
        term = done != DONE_NO and done != DONE_TRUNCATED
        trunc = done == DONE_TRUNCATED
        table = self._table  # every seat is live until the episode ends: agents are the seats in order
        rewards = dict(zip(agents, table.rewards.tolist()))  # noqa: B905 (one value per seat by construction)
        terminations = dict.fromkeys(agents, term)
        truncations = dict.fromkeys(agents, trunc)
        infos: dict[str, dict[str, Any]] = {}  # flags on a copy of the seat's no-event infos (match score)
        flags = table.illegal.tolist(), table.lost_race.tolist(), table.applied.tolist()
        for name, illegal, lost, applied, no_event in zip(agents, *flags, self._no_event):  # noqa: B905
            infos[name] = info = no_event.copy()
            info["illegal"] = illegal
            info["lost_race"] = lost
            info["action"] = applied
        for name in missing:
            infos[name]["missing_action"] = True
        if self.obs_key is None:  # the mask in exactly one place: TorchRL's wrapper fails when it is in both
            for name, mask in zip(agents, masks):  # noqa: B905
                infos[name]["action_mask"] = mask
        if state.round_end.item(0):
            self._add_round_infos(infos)
        if done != DONE_NO:
            self.agents = []
        if self.render_mode == "human":
            self.render()
        return obs, rewards, terminations, truncations, infos

    def _checked_row(self, actions: dict[str, Any], row: np.ndarray) -> set[str]:
        """Fill ``row`` from ``actions``, checking names (and legality in ``"raise"`` mode) before anything
        changes. Returns the live agents left out (they wait)."""
        seat = self._seat
        values = [0] * len(self.possible_agents)  # a live agent left out waits
        missing = set(self.agents)
        for agent, value in actions.items():
            p = seat.get(agent)
            if p is None or agent not in missing:
                why = "unknown agent" if p is None else "agent not live (or named twice)"
                raise ValueError(f"{why} {short(agent)}; the live agents are {self.agents}")
            missing.discard(agent)
            values[p] = self._action_of(agent, value)
        if missing and self.illegal_action == "raise":
            raise ValueError(f"no action given for live agent(s) {sorted(missing)}")
        row[:] = values
        return missing

    def _action_of(self, agent: str, value: Any) -> int:
        """Live ``agent``'s action for the engine (-1: illegal, a flagged wait, unless ``"raise"`` mode raises)."""
        a = value if type(value) is int else _as_action(agent, value)  # plain ints skip the checks
        if a is None or not 0 <= a < self._num_actions or not self._state.mask[0, self._seat[agent], a]:
            if self.illegal_action == "raise":
                raise ValueError(f"action {short(value)} of {agent!r} is not legal now (see the action_mask)")
            return -1
        return a

    def _observations(self) -> tuple[dict[str, Any], np.ndarray]:
        """Each live agent's observation in the ``obs_key`` form, and its mask, copied out of the engine."""
        agents = self.agents
        if not agents:
            return {}, self._table.mask[:0]
        o = self._table.obs.copy()
        masks = self._table.mask.copy()
        key = self.obs_key
        if key is None:
            return dict(zip(agents, o)), masks  # noqa: B905 (one row per seat, every seat live)
        return {a: {key: x, "action_mask": m} for a, x, m in zip(agents, o, masks)}, masks  # noqa: B905

    def _add_round_infos(self, infos: dict[str, dict[str, Any]]) -> None:
        table, cfg, team = self._table, self.config, self.config.team_of
        totals = table.score_round.tolist()  # the engine's score of the round (finish_round)
        self._no_event = [no_event_infos(m) for m in table.match_score.tolist()]
        for a, info in infos.items():
            p = self._seat[a]
            info["round_end"] = int(table.round_end)
            info["score"] = totals[p]
            info["score_lake"] = int(table.score_lake[p])
            info["score_nertz_penalty"] = -cfg.nertz_penalty * int(table.score_nertz[p])
            info["score_bonus"] = int(table.score_bonus[p])
            info["score_false_calls"] = -cfg.false_call_penalty * int(table.score_false[p])
            info["nertz_left"] = int(table.score_nertz[p])
            info["match_score"] = self._no_event[p]["match_score"]
            info["team_score"] = sum(t for q, t in enumerate(totals) if team[q] == team[p])

    def render(self, mode: str | None = None) -> Any:
        """The table in ``mode`` (default: ``render_mode``): text for ``"ansi"``, printed for ``"human"``, an
        (H, W, 3) uint8 picture for ``"rgb_array"``. Without either, a warning and None."""
        mode = _render.check_mode(mode) if mode is not None else self.render_mode
        if mode is None:
            gymnasium.logger.warn(
                "render() called without a render_mode; pass render_mode='ansi', 'human' or 'rgb_array'"
            )
            return None
        return _render.render_snapshot(self.snapshot(), mode)

    def close(self) -> None:
        """Mark the env closed: ``step`` and ``reset`` raise from now on (closing twice is harmless)."""
        self._closed = True
        self.agents = []  # so step() takes its no-live-agents branch, which says the env is closed

    # ------------------------------------------------------------------ extras
    def snapshot(self) -> dict[str, Any]:
        """The whole table as a ``nertz-snapshot/1`` dict (JSON-ready); restore with
        ``reset(options={"snapshot": s})``."""
        return snapshot_table(self._state, self.config, 0)

    def state(self) -> np.ndarray:
        """PettingZoo's global state: the whole table, hidden cards included, as a new float32 vector
        (:mod:`nertz_env.global_state`). For centralized critics only."""
        layout = state_layout(self.config)
        return layout.fill(self._state, np.empty((1, layout.size), np.float32))[0]

    def describe_action(self, index: int) -> str:
        """An action index of this config in words."""
        return self.actions.describe(index)

    def action_mask(self, agent: str) -> np.ndarray:
        """A copy of ``agent``'s current legal-action mask (int8)."""
        return self._state.mask[0, self._seat[agent]].copy()

    @property
    def tick(self) -> int:
        """The table's tick counter within the current round."""
        return int(self._state.tick[0])


class raw_env(parallel_to_aec_wrapper):
    """The AEC form without the order-enforcing wrapper (as PettingZoo modules name it)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NertzParallelEnv(**kwargs))

    def step(self, action: Any) -> None:
        check_open(self.env, "step")  # the parallel env only steps once every agent has acted
        agent = self.agent_selection
        if not (self.terminations[agent] or self.truncations[agent]):
            self.env._action_of(agent, action)  # a bad action raises now, not at the last agent's step
        super().step(action)

    def render(self, mode: str | None = None) -> Any:
        return self.env.render(mode)


class OrderEnforcedEnv(OrderEnforcingWrapper):
    """What :func:`env` returns: PettingZoo's order-enforcing wrapper, whose ``render`` takes an optional mode."""

    def render(self, mode: str | None = None) -> Any:
        if mode is None:
            return super().render()
        if not self._has_reset:
            EnvLogger.error_render_before_reset()
        return self.env.render(mode)


class EnvOptions(Rules, total=False):
    """The keywords of :func:`parallel_env` and :func:`env`: the table size, the env's own options (defaults
    and meanings: :class:`NertzParallelEnv`) and the :class:`~nertz_env.Rules`."""

    num_players: int
    render_mode: str | None
    illegal_action: str
    max_cycles: int | None
    obs_key: str | None


parallel_env = NertzParallelEnv  # the factory, named as PettingZoo's environments name it


def env(**options: Unpack[EnvOptions]) -> OrderEnforcedEnv:
    """Nertz as a PettingZoo ``AECEnv`` (``parallel_to_aec`` of :func:`parallel_env`, order-enforced); the
    keywords are :func:`parallel_env`'s."""
    return OrderEnforcedEnv(raw_env(**options))


def describe_action(index: int, **rules: Any) -> str:
    """An action index in words, for the config given by ``rules`` (default: 4 players, default rules)."""
    return action_table(make_config(**rules)).describe(index)
