"""Many tables in one call: the batched adapter over the same engine that ``parallel_env`` uses.

Guide: docs/guides/vector-envs.md; the infos schema: docs/env/api.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium
import numpy as np

from nertz_env import render as _render
from nertz_env._envbase import Copyable, check_open, obs_space, table_seeds, warn_unknown_options
from nertz_env._text import short
from nertz_env.actions import ActionTable, action_table
from nertz_env.config import NertzConfig, Rules, Unpack, is_int, make_config
from nertz_env.engine import batch
from nertz_env.engine.rules import reset_block, sample_block, step_block
from nertz_env.engine.state import DONE_NO, DONE_TRUNCATED, PARAMETERS, allocate
from nertz_env.global_state import state_layout, state_space
from nertz_env.infos import VECTOR
from nertz_env.observation import obs_layout
from nertz_env.snapshot import restore_table, snapshot_table


class NertzVectorEnv(Copyable, gymnasium.vector.VectorEnv):
    """``num_tables`` Nertz tables stepped together, a ``gymnasium.vector.VectorEnv`` of one table per
    sub-environment: arrays shaped ``(tables, players, ...)``, ``infos`` a dict of arrays
    (:data:`nertz_env.infos.VECTOR`). The keywords are :func:`nertz_env.parallel_env`'s and ``autoreset``,
    ``copy``, ``render_mode``: docs/guides/vector-envs.md says what each does."""

    metadata = {
        "autoreset_mode": gymnasium.vector.AutoresetMode.NEXT_STEP,
        "render_modes": list(_render.RENDER_MODES),
        "render_fps": _render.RENDER_FPS,
    }
    _derived = ("_step_fn", "_sample_fn", "_views")

    def __init__(
        self,
        num_tables: int,
        num_players: int = 4,
        *,
        autoreset: bool = True,
        copy: bool = True,
        render_mode: str | None = None,
        **rules: Unpack[Rules],
    ) -> None:
        self.render_mode = _render.check_mode(render_mode)
        self.config: NertzConfig = make_config(num_players=num_players, **rules)
        self._state = allocate(self.config, num_tables)  # refuses a bad num_tables
        self.actions: ActionTable = action_table(self.config)
        self.obs_layout = obs_layout(self.config)
        self.num_envs = int(num_tables)
        self.num_tables = self.num_envs
        self.num_players = self.config.num_players
        self.autoreset = bool(autoreset)
        self.copy = bool(copy)
        p, a = self.num_players, self.actions.n
        self.single_observation_space = obs_space(self, "observation", (p,))
        self.single_action_space = gymnasium.spaces.MultiDiscrete(np.full(p, a, dtype=np.int64))
        self.observation_space = gymnasium.vector.utils.batch_space(
            self.single_observation_space, self.num_envs
        )
        self.action_space = gymnasium.vector.utils.batch_space(self.single_action_space, self.num_envs)
        #: the global state of one table, ``Box(0, 1, (S,), float32)``, and of the batch, ``(tables, S)``
        self.single_state_space = state_space(self.config)
        self.state_space = state_space(self.config, self.num_envs)
        self._agent_rng = np.zeros(self.num_envs, dtype=np.uint64)
        self._sampled = np.zeros((self.num_envs, p), dtype=np.int64)
        self._acts = np.zeros((self.num_envs, p), dtype=np.int64)
        self._started = False
        self._closed = False
        self._bind()

    def _bind(self) -> None:
        # the compiled entry points without numba's per-call type dispatch
        self._step_fn = batch.bound(step_block, self._state, self._acts, True, 0, 1)
        self._sample_fn = batch.bound(sample_block, self._state.mask, self._agent_rng, self._sampled, 0, 1)
        # copy=False hands out views that cannot be made writeable: the engine reads legality from its mask
        arrays = {"observation": self._state.obs, "action_mask": self._state.mask, "sampled": self._sampled}
        self._views = {k: np.asarray(a.data.toreadonly()) for k, a in arrays.items()}

    # ------------------------------------------------------------------ Gymnasium API
    def reset(
        self, *, seed: int | Sequence[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Deal every table. ``seed``: an int (table t gets seed + t), one seed per table, or None (fresh
        entropy). ``options={"snapshots": {t: snapshot}}`` then restores those tables;
        ``options={"reset_mask": mask}`` (bool, (tables,)) deals only the tables where ``mask`` is True."""
        check_open(self, "reset")
        options = dict(options or {})
        warn_unknown_options(options, ("snapshots", "reset_mask"))
        snaps = options.get("snapshots", {})
        if not isinstance(snaps, Mapping):
            raise ValueError(
                f"options['snapshots'] must be a dict of table number -> snapshot, got {short(snaps)}"
            )
        snaps = {self._table_index(t, "each key of options['snapshots']"): snap for t, snap in snaps.items()}
        if "reset_mask" in options:
            mask = np.asarray(options["reset_mask"])
            if mask.shape != (self.num_envs,) or mask.dtype != np.bool_ or not mask.any():
                raise ValueError(
                    f"reset_mask must be a bool array of shape ({self.num_envs},) with at least one True, "
                    f"got {mask.dtype} {mask.shape}"
                )
            if not self._started and not mask.all():
                raise ValueError("reset_mask: the first reset() must deal every table")
            if seed is not None:
                batch.seed(self._state, table_seeds(seed, self.num_envs), mask)
            for t in np.flatnonzero(mask).tolist():
                reset_block(self._state, t, t + 1)
        else:
            seeds = table_seeds(seed, self.num_envs)
            batch.reset(self._state, seeds)
            ss = np.random.SeedSequence([int(seeds[0]), self.num_envs, 0x5A3B])
            self._agent_rng[:] = ss.generate_state(self.num_envs, np.uint64)
        for t, snap in snaps.items():
            restore_table(self._state, self.config, snap, t)
        self._started = True
        obs = self.observations()
        dims = {"T": self.num_envs, "P": self.num_players}
        none_yet = (k for k in VECTOR if k.name != "action_mask")  # the schema's other keys, all zero at reset
        infos = {k.name: np.zeros([dims[d] for d in k.shape], k.kind) for k in none_yet}
        return obs, infos | {"action_mask": obs["action_mask"]}

    def step(
        self, actions: Any
    ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """One tick on every table. ``actions``: integers of shape (tables, players); out-of-range or masked
        actions are applied as waits and flagged in ``infos["illegal"]``."""
        if not self._started:
            check_open(self, "step")
            raise RuntimeError("call reset() before step()")
        acts = np.asarray(actions)
        if acts.shape != (self.num_envs, self.num_players):
            raise ValueError(
                f"actions must have shape (num_tables, num_players) = {(self.num_envs, self.num_players)}, "
                f"got {acts.shape}"
            )
        if not np.issubdtype(acts.dtype, np.integer):
            raise ValueError(f"actions must be integers, got dtype {acts.dtype}")
        self._acts[...] = acts  # into the batch's own int64 buffer, the type the bound step expects
        acts = self._acts
        state = self._state
        was_done = state.done != DONE_NO if self.autoreset else None
        batch.run(self._step_fn, (state, acts, self.autoreset), self.num_envs)
        done = state.done
        term = (done != DONE_NO) & (done != DONE_TRUNCATED)
        trunc = done == DONE_TRUNCATED
        p = self.num_players
        obs = self.observations()
        infos = {
            "illegal": state.illegal.astype(bool),
            "lost_race": state.lost_race.astype(bool),
            "round_end": state.round_end.copy(),
            "score": state.score_round.copy(),
            "autoreset": was_done if was_done is not None else np.zeros(self.num_envs, bool),
            "action_mask": obs["action_mask"],
        }
        return (
            obs,
            state.rewards.copy(),
            np.repeat(term[:, None], p, axis=1),
            np.repeat(trunc[:, None], p, axis=1),
            infos,
        )

    def close_extras(self, **kwargs: Any) -> None:
        """``step`` and ``reset`` raise from now on."""
        self._closed = True
        self._started = False  # so step() takes its not-started branch, which says the env is closed

    def render(self, tables: Sequence[int] | None = None) -> tuple[Any, ...] | None:
        """One frame per table (of ``tables``, default all) in ``render_mode``: a tuple of (H, W, 3) frames for
        ``"rgb_array"`` or of texts for ``"ansi"``; ``"human"`` prints them. Without a render_mode, a warning
        and None."""
        if not self._started:
            check_open(self, "render")
            raise RuntimeError("call reset() before render()")
        mode = self.render_mode
        if mode is None:
            gymnasium.logger.warn(
                "render() called without a render_mode; pass render_mode='ansi', 'human' or 'rgb_array'"
            )
            return None
        chosen = range(self.num_envs) if tables is None else [self._table_index(t) for t in tables]
        if mode == "human":
            for t in chosen:
                print(f"table {t}")
                _render.render_snapshot(self.snapshot(t), mode)
            return None
        return tuple(_render.render_snapshot(self.snapshot(t), mode) for t in chosen)

    # ------------------------------------------------------------------ extras
    def reset_tables(self, tables: Sequence[int] | np.ndarray) -> None:
        """Deal a new round now on each table in ``tables``, from its own generator (as autoreset would).
        Their observations and masks are rebuilt in place (see :meth:`observations`)."""
        if not self._started:
            raise RuntimeError("call reset() before reset_tables()")
        for t in np.asarray(tables).reshape(-1).tolist():
            i = self._table_index(t)
            reset_block(self._state, i, i + 1)

    def state(self) -> np.ndarray:
        """Every table's global state, float32 ``(tables, S)``, hidden cards included
        (:mod:`nertz_env.global_state`). For centralized critics only."""
        layout = state_layout(self.config)
        return layout.fill(self._state, np.empty((self.num_envs, layout.size), np.float32))

    def sample_actions(self) -> np.ndarray:
        """Uniformly random legal actions for every seat, compiled, from the batch's own agent generator."""
        batch.run(self._sample_fn, (self._state.mask, self._agent_rng, self._sampled), self.num_envs)
        return self._sampled.copy() if self.copy else self._views["sampled"]

    def snapshot(self, table: int) -> dict[str, Any]:
        """Table ``table`` as a ``nertz-snapshot/1`` dict."""
        return snapshot_table(self._state, self.config, self._table_index(table))

    def restore(self, table: int, snap: dict[str, Any]) -> None:
        """Load a ``nertz-snapshot/1`` dict into table ``table`` (its config must equal this batch's)."""
        restore_table(self._state, self.config, snap, self._table_index(table))

    def bytes_per_table(self) -> int:
        """Memory of one table's state, observations and masks (the engine's arrays divided by tables)."""
        shared = (*PARAMETERS, "scratch")  # the config's arrays and the rules' work space
        return (
            sum(int(a.nbytes) for name, a in self._state._asdict().items() if name not in shared)
            // self.num_envs
        )

    # ------------------------------------------------------------------ helpers
    def _table_index(self, table: int, what: str = "table") -> int:
        if not is_int(table) or not 0 <= table < self.num_envs:
            raise ValueError(f"{what} must be an integer from 0 to {self.num_envs - 1}, got {short(table)}")
        return int(table)

    def observations(self) -> dict[str, np.ndarray]:
        """The current observations and masks, shaped like ``step``'s (read-only views if not ``copy``)."""
        state = self._state
        if self.copy:
            return {"observation": state.obs.copy(), "action_mask": state.mask.copy()}
        return {"observation": self._views["observation"], "action_mask": self._views["action_mask"]}


vector_env = NertzVectorEnv  # the factory, named as parallel_env is
