"""The training run: env stack, MaskablePPO, pool snapshots, checkpoints, evaluation, throughput. Periodic
work and Ctrl-C's save happen at rollout boundaries, where a checkpoint (SB3's zip and ``.state.pkl``) holds
the whole run: a resumed run equals a straight one. See docs/guides/training-sb3.md.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import pickle
import random
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.save_util import load_from_zip_file
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecMonitor
from tqdm import tqdm

from nertz_env.agents.meta import (
    CheckpointError,
    IncompatibleCheckpointError,
    make_meta,
    read_meta,
    write_meta,
)
from nertz_env.agents.policy import load_policy, save_policy
from nertz_env.agents.pool import OpponentPool
from nertz_env.config import NertzConfig, make_config
from nertz_env.single import NertzSingleAgentEnv
from nertz_env.threads import limit_threads, usable_cpus
from nertz_env.train.checkpoint import check_run, state_path
from nertz_env.train.config import TrainConfig
from nertz_env.train.evaluate import EvalRow, append_csv, evaluate_checkpoint, format_rows
from nertz_env.train.moves import MovesPolicy
from nertz_env.train.privileged import FIRST_VALUE_LAYER, PrivilegedCriticPolicy
from nertz_env.train.resume import Interrupted, StopOnSignal
from nertz_env.train.vec import NertzVecEnv
from nertz_env.train.wrappers import PotentialShaping, RelativeReward, VecTimer

STATE_FORMAT = "nertz-train-state/2"


class _BoundaryCallback(BaseCallback):
    """The SB3 callback of a run: calls the trainer at rollout boundaries, keeps the progress bar, and stops
    ``learn()`` after a boundary's checkpoint when a signal asked to stop."""

    def __init__(self, trainer: Trainer, stop: StopOnSignal) -> None:
        super().__init__()
        self.trainer = trainer
        self.stop = stop
        self.bar: Any = None
        self._rollout_t0 = 0.0

    def _on_training_start(self) -> None:
        tr = self.trainer
        tr.timer.seconds = 0.0  # the first reset (and numba's cache load) is not training
        tr.clock.t0 = time.perf_counter()
        # the transitions the run trains to: total_timesteps rounded up to whole rollouts
        self.bar = tqdm(
            total=tr.cfg.planned_timesteps(int(self.model.num_timesteps)),
            initial=self.model.num_timesteps,
            unit="step",
            dynamic_ncols=True,
            smoothing=0.1,
            disable=not tr.cfg.progress_bar,
        )

    def _on_rollout_start(self) -> None:
        tr, t0 = self.trainer, time.perf_counter()
        tr.on_boundary()
        if self.stop.requested and not tr.stopped:
            tr.stopped = True
            steps = int(self.model.num_timesteps)
            if steps:
                done = tr._checkpoint_path(steps)  # written at this boundary already, or written now
                tr.stop_checkpoint = done if done in tr.checkpoints else tr.save_checkpoint(periodic=False)
        self._rollout_t0 = time.perf_counter()
        tr.clock.boundary_seconds += self._rollout_t0 - t0

    def _on_step(self) -> bool:
        if self.trainer.stopped:  # a step past the stop's checkpoint is not kept
            return False
        self.bar.update(self.training_env.num_envs)
        return True

    def _on_rollout_end(self) -> None:
        c = self.trainer.clock
        c.rollout_seconds += time.perf_counter() - self._rollout_t0
        wall = time.perf_counter() - c.t0 - c.boundary_seconds
        if wall > 0:
            self.logger.record("time/env_share", self.trainer.timer.seconds / wall)
            self.logger.record("time/rollout_share", c.rollout_seconds / wall)

    def _on_training_end(self) -> None:
        self.bar.close()


@dataclass
class Clock:
    """Wall, rollout, boundary (evaluations and checkpoints) and env time of this session, and its
    transitions, for the throughput report; ``t0``: when training started."""

    wall_seconds: float = 0.0
    rollout_seconds: float = 0.0
    boundary_seconds: float = 0.0
    env_seconds: float = 0.0
    timesteps: int = 0
    t0: float = 0.0


@contextlib.contextmanager
def _in_folder(folder: str) -> Iterator[None]:
    """Work in ``folder``: a seated snapshot opponent pickles its file's path relative to the current folder,
    so within the run folder a checkpoint names its snapshots as ``pool/<name>.zip``."""
    old = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(old)


class Trainer:
    """One training run of ``cfg``, fresh or continuing the checkpoint ``resume``; ``log`` takes the progress
    messages. Bad input raises (``ConfigError``, ``CheckpointError``, ``FileNotFoundError``) before the first file
    is written. See docs/guides/training-sb3.md.
    """

    def __init__(
        self,
        cfg: TrainConfig,
        resume: str | None = None,
        log: Callable[[str], None] = print,
    ) -> None:
        cfg, notes, resume_meta = check_run(cfg, resume)
        self.cfg = cfg
        self.log = log
        limit_threads(cfg.torch_threads or usable_cpus())
        self.config: NertzConfig = make_config(num_players=cfg.num_players, **cfg.rules)
        self.run_dir = os.path.abspath(cfg.run_dir)
        p = cfg.pool
        self.pool = (
            OpponentPool(p.opponents, p.snapshot_weight, p.max_snapshots, p.snapshot_deterministic) if p else None
        )
        self.base_env = self._make_base_env()
        self.monitor = VecMonitor(self.base_env)
        env: VecEnv = self.monitor
        if cfg.relative_reward:
            env = RelativeReward(env)
        self.shaping: PotentialShaping | None = None
        if cfg.shaping is not None:
            self.shaping = PotentialShaping(env, self.config, cfg.shaping.scale, cfg.shaping.gamma, cfg.shaping.coef)
            env = self.shaping
        self.timer = VecTimer(env)
        self.clock = Clock()
        net = list(cfg.net_arch)
        with warnings.catch_warnings():  # resolve() says it in one line: SB3 would add a multi-line warning
            warnings.filterwarnings("ignore", message="You have specified a mini-batch size")
            self.model = self._make_model(cfg, net)
        self.last_boundary = 0
        self.eval_rows: list[EvalRow] = []
        self.checkpoints: list[str] = []
        self.stopped = False  # a signal stopped the run at a rollout boundary
        self.stop_checkpoint: str | None = None  # the checkpoint saved there (None: nothing trained yet)
        if resume is not None:
            self._load(resume, resume_meta)
        elif cfg.init_from is not None:
            self._init_from(cfg.init_from)
        if resume is None and self.pool is not None and self.pool.snapshot_weight > 0:
            self._add_snapshot()  # the initial policy, so a pool of snapshots only is never empty
        for note in notes:
            log(f"note: {note}")

    def _make_model(self, cfg: TrainConfig, net: list[int]) -> MaskablePPO:
        activation = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh}[cfg.activation]
        kwargs: dict[str, Any] = {"net_arch": {"pi": net, "vf": net}, "activation_fn": activation}
        lr = cfg.learning_rate  # lr_schedule linear: falls to 0 at the end (SB3's progress goes from 1 to 0)
        privileged = cfg.vector is not None and cfg.vector.privileged_critic
        if privileged:
            assert isinstance(self.base_env, NertzVecEnv)
            kwargs["obs_size"] = self.base_env.obs_size
        if cfg.policy == "moves":
            kwargs |= {"rules": self.config.to_dict(), "move_arch": list(cfg.move_arch)}
        # the options TrainConfig and MaskablePPO name alike
        same = ("n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda", "clip_range", "ent_coef",
                "vf_coef", "max_grad_norm", "seed", "verbose")
        return MaskablePPO(
            MovesPolicy if cfg.policy == "moves" else PrivilegedCriticPolicy if privileged else "MlpPolicy",
            self.timer,
            learning_rate=(lambda progress: lr * progress) if cfg.lr_schedule == "linear" else lr,
            policy_kwargs=kwargs,
            tensorboard_log=os.path.join(self.run_dir, "tb") if cfg.tensorboard else None,
            device="cpu",
            **{k: getattr(cfg, k) for k in same},
        )

    # ------------------------------------------------------------------ building
    def _make_base_env(self) -> VecEnv:
        cfg = self.cfg
        if cfg.vector is not None:
            return NertzVecEnv(
                cfg.vector.num_tables,
                cfg.num_players,
                rules=cfg.rules,
                learners_per_table=cfg.vector.learners_per_table,
                opponents=self.pool,
                seed=cfg.seed,
                opponent_threads=cfg.vector.opponent_threads,
                privileged_state=cfg.vector.privileged_critic,
            )
        assert self.pool is not None and cfg.single is not None
        make = partial(NertzSingleAgentEnv, cfg.num_players, cfg.rules, opponents=self.pool)
        return DummyVecEnv([make for _ in range(cfg.single.num_envs)])

    def meta(self, **extra: Any) -> dict[str, Any]:
        """The nertz-env record of a file saved now."""
        return make_meta(
            self.config,
            mode=self.cfg.mode,
            n_envs=self.cfg.n_envs,
            num_timesteps=int(self.model.num_timesteps),
            train_config=self.cfg.to_dict(),
            **extra,
        )

    # ------------------------------------------------------------------ periodic work
    def on_boundary(self) -> None:
        """Rollout boundary: snapshot, evaluation and checkpoint when due (called before each rollout).

        The checkpoint comes last, so it records everything done at this boundary, and a run resumed from
        it skips the boundary it starts at (``last_boundary``)."""
        cfg, steps = self.cfg, int(self.model.num_timesteps)
        if steps == 0 or steps == self.last_boundary:
            return
        last, self.last_boundary = self.last_boundary, steps

        def due(every: int) -> bool:  # a multiple of ``every`` passed since the last boundary
            return every > 0 and steps // every > last // every

        p, e = cfg.pool, cfg.evaluation
        # (snapshot_every is 0 unless snapshots have weight: TrainConfig resets it)
        if p is not None and p.snapshot_every > 0 and steps // cfg.rollout_size % p.snapshot_every == 0:
            self._add_snapshot()
        if e is not None and due(e.every):
            self.evaluate()
        if due(cfg.checkpoint_every):
            self.save_checkpoint(periodic=True)

    def _add_snapshot(self) -> None:
        assert self.pool is not None
        steps = int(self.model.num_timesteps)
        path = os.path.join(self.run_dir, "pool", f"snapshot_{steps:012d}.zip")
        save_policy(self.model.policy, self.model.policy_kwargs, path, self.meta())
        self.pool.add_snapshot(path, name=f"snapshot@{steps}")

    def evaluate(self) -> list[EvalRow]:
        """Save the current policy to ``eval/`` and play it against ``eval_opponents``; log the rows."""
        cfg, e, steps = self.cfg, self.cfg.evaluation, int(self.model.num_timesteps)
        if e is None:
            return []
        path = os.path.join(self.run_dir, "eval", f"policy_{steps:012d}.zip")
        save_policy(self.model.policy, self.model.policy_kwargs, path, self.meta())
        rows = evaluate_checkpoint(
            path, e.opponents, cfg.num_players, cfg.rules, e.deals, e.seed,
            deterministic=e.deterministic, workers=e.workers, timesteps=steps,
        )
        append_csv(os.path.join(self.run_dir, "eval.csv"), rows)
        # SB3 makes the logger in learn(): a resume with no steps left to train has none, and its
        # evaluation goes to eval.csv and the log only
        logger = getattr(self.model, "_logger", None)
        if logger is not None:
            tags = {"score": "score", "baseline_score": "baseline_score", "score_diff": "diff",
                    "score_diff_low": "diff_low", "win": "win", "nertz_out": "nertz_out"}
            for r in rows:
                key = f"eval/{r.baseline.replace(':', '_').replace('/', '_')}"
                for tag, field in tags.items():
                    logger.record(f"{key}/{tag}", getattr(r, field))
            logger.dump(steps)
        self.eval_rows.extend(rows)
        self.log(f"evaluation at {steps} steps ({path}):\n{format_rows(rows)}")
        return rows

    # ------------------------------------------------------------------ training
    def train(self) -> dict[str, Any]:
        """Train up to ``total_timesteps``; write the final checkpoint and policy; return the report.

        Raises:
            Interrupted: a first Ctrl-C or SIGTERM stopped the run at a rollout boundary, saved there."""
        cfg, model = self.cfg, self.model
        remaining = cfg.total_timesteps - int(model.num_timesteps)
        planned = cfg.planned_timesteps(int(model.num_timesteps))
        if planned != max(cfg.total_timesteps, int(model.num_timesteps)):
            self.log(
                f"training to {planned:,} transitions, not total_timesteps {cfg.total_timesteps:,}: PPO trains "
                f"whole rollouts of n_steps {cfg.n_steps} x {cfg.n_envs} sub-envs = {cfg.rollout_size:,}"
            )
        with StopOnSignal("nertz-train", "this rollout and update") as stop:
            if remaining > 0:
                steps0 = int(model.num_timesteps)
                try:
                    model.learn(
                        remaining,
                        callback=_BoundaryCallback(self, stop),
                        reset_num_timesteps=model.num_timesteps == 0 and model._last_obs is None,
                        tb_log_name="ppo",
                        progress_bar=False,
                    )
                finally:
                    self.clock.wall_seconds += time.perf_counter() - self.clock.t0
                    self.clock.timesteps += int(model.num_timesteps) - steps0
                    self.clock.env_seconds += self.timer.seconds
                    self.timer.seconds = 0.0
            if self.stopped:
                saved = self.stop_checkpoint
                steps = int(read_meta(saved)["num_timesteps"]) if saved else 0
                raise Interrupted(saved, f"the run at its last finished update ({steps:,} transitions)")
            return self._finish()

    def _finish(self) -> dict[str, Any]:
        """The final checkpoint, policy, evaluation and throughput report (after learn())."""
        cfg, model = self.cfg, self.model
        t0 = time.perf_counter()
        final = self.save_checkpoint(periodic=False)
        policy = save_policy(model.policy, model.policy_kwargs, os.path.join(self.run_dir, "policy.zip"),
                             self.meta(checkpoint=final))
        if cfg.evaluation is not None and not any(r.timesteps == model.num_timesteps for r in self.eval_rows):
            self.evaluate()
        self.clock.wall_seconds += time.perf_counter() - t0
        self.clock.boundary_seconds += time.perf_counter() - t0
        report = self.report(final, policy)
        with open(os.path.join(self.run_dir, "throughput.json"), "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2)
        self.log(format_report(report))
        return report

    def report(self, checkpoint: str | None = None, policy: str | None = None) -> dict[str, Any]:
        """Throughput of this session. Rates leave out the time spent on evaluations and checkpoints
        (``boundary_seconds``): those at rollout boundaries and the final ones after training."""
        c = self.clock
        train_wall = c.wall_seconds - c.boundary_seconds

        def rate(x: float) -> float | None:
            return x / train_wall if train_wall > 0 else None

        return {
            "mode": self.cfg.mode,
            "n_envs": self.cfg.n_envs,
            "num_timesteps": int(self.model.num_timesteps),
            "timesteps_timed": c.timesteps,
            "wall_seconds": c.wall_seconds,
            "boundary_seconds": c.boundary_seconds,
            "steps_per_second": rate(c.timesteps),
            "table_ticks_per_second": rate(c.timesteps / self.cfg.learners),
            "env_seconds": c.env_seconds,
            "env_share": rate(c.env_seconds),
            "rollout_share": rate(c.rollout_seconds),
            "torch_threads": torch.get_num_threads(),
            "checkpoint": checkpoint,
            "policy": policy,
            "eval": [r.__dict__ for r in self.eval_rows],
        }

    # ------------------------------------------------------------------ checkpoints
    def _checkpoint_path(self, steps: int) -> str:
        return os.path.join(self.run_dir, "checkpoints", f"step_{steps:012d}.zip")

    def save_checkpoint(self, periodic: bool = True) -> str:
        """Write ``checkpoints/step_<timesteps>.zip`` (+ ``.json``, ``.state.pkl``); returns the zip path. Every
        file is written under a temporary name and renamed, the zip last: a checkpoint is complete or absent."""
        model = self.model
        path = self._checkpoint_path(int(model.num_timesteps))
        folder, name = os.path.split(path)
        os.makedirs(folder, exist_ok=True)  # (policy files make their own folders: eval/ and pool/ only when used)
        tmp_zip, tmp_state = os.path.join(folder, f"tmp_{name}"), state_path(path) + ".tmp"
        tmp_json = os.path.splitext(tmp_zip)[0] + ".json"
        placed: list[str] = []
        try:
            with open(tmp_state, "wb") as f:
                pickle.dump(self._state(), f, protocol=pickle.HIGHEST_PROTOCOL)
            model.save(tmp_zip)
            write_meta(tmp_zip, self.meta())
            for tmp, final in ((tmp_state, state_path(path)), (tmp_json, os.path.splitext(path)[0] + ".json")):
                os.replace(tmp, final)
                placed.append(final)
            os.replace(tmp_zip, path)
            placed = []
        finally:  # cut short (a second Ctrl-C, a full disk): nothing of this checkpoint stays
            for tmp in (tmp_zip, tmp_state, tmp_json, *placed):
                if os.path.exists(tmp):
                    os.remove(tmp)
        if path not in self.checkpoints:
            self.checkpoints.append(path)
        self.log(f"checkpoint: {path}")
        if periodic and self.cfg.keep_checkpoints > 0:
            self._prune_checkpoints()
        return path

    def _state(self) -> dict[str, Any]:
        """What a resume needs besides SB3's zip: generators, env, pool and wrapper accumulators. Snapshot
        files are named relative to the run folder."""
        with _in_folder(self.run_dir):  # seated snapshots pickle their path relative to it
            env = self.base_env.state_dict() if isinstance(self.base_env, NertzVecEnv) else [
                e.state_dict() for e in self.base_env.envs  # type: ignore[attr-defined]
            ]
            env_blob = pickle.dumps(env, protocol=pickle.HIGHEST_PROTOCOL)
        pool = self.pool.state_dict() if self.pool is not None else None
        if pool is not None:
            pool["snapshots"] = [{**e, "spec": os.path.relpath(e["spec"], self.run_dir)} for e in pool["snapshots"]]
        return {
            "format": STATE_FORMAT,
            "env": env_blob,
            "monitor": {k: getattr(self.monitor, k) for k in ("episode_returns", "episode_lengths",
                                                              "episode_count")},
            "shaping": self.shaping.state_dict() if self.shaping is not None else None,
            "pool": pool,
            "rng": {
                "torch": torch.get_rng_state(),
                "numpy": np.random.get_state(),  # noqa: NPY002 (SB3 shuffles minibatches with it)
                "python": random.getstate(),
            },
        }

    def _prune_checkpoints(self) -> None:
        pattern = os.path.join(self.run_dir, "checkpoints", "step_*.zip")
        existing = sorted(glob.glob(pattern))
        for old in existing[: max(0, len(existing) - self.cfg.keep_checkpoints)]:
            for p in (old, os.path.splitext(old)[0] + ".json", state_path(old)):
                if os.path.exists(p):
                    os.remove(p)

    def _init_from(self, path: str) -> None:
        """Copy the policy weights of ``path`` into the fresh model (optimizer, counters, env start anew)."""
        policy, _ = load_policy(path)  # TrainConfig.resolve checked its record against the table
        weights = policy.state_dict()  # always the policy over the observation (load_policy's for_play)
        env = self.base_env
        # the critic starts as the given one on the observation, with zero weights on the state (a network of
        # another width is left as it is, for load_state_dict below to refuse)
        if isinstance(env, NertzVecEnv) and env.privileged_state and weights[FIRST_VALUE_LAYER].shape[1] == env.obs_size:
            w = weights[FIRST_VALUE_LAYER]
            weights[FIRST_VALUE_LAYER] = torch.cat([w, w.new_zeros(len(w), env.state_size)], dim=1)
        try:
            self.model.policy.load_state_dict(weights)
        except RuntimeError as e:
            first = str(e).strip().splitlines()[0]
            raise IncompatibleCheckpointError(
                f"init_from {path}: its network does not fit net_arch={self.cfg.net_arch} and "
                f"activation={self.cfg.activation!r} ({first})"
            ) from None
        self.log(f"initial weights from {path}")

    def _load_pool(self, saved: dict[str, Any], run: str) -> None:
        """Restore the pool's snapshots (files relative to ``run``); the opponents and snapshot settings are the
        config's, so changing them on resume takes effect (from each table's next deal; the seated opponents
        finish their round)."""
        assert self.pool is not None
        mine = self.pool.state_dict()  # the config's settings, no snapshots yet
        changed = [k for k in mine if k != "snapshots" and saved.get(k) != mine[k]]
        if changed:
            self.log(f"resume: the opponent pool is now {self.pool!r} (changed: {', '.join(changed)})")
        snapshots = [{**e, "spec": os.path.join(run, e["spec"])} for e in saved["snapshots"]]
        self.pool.load_state_dict({**mine, "snapshots": snapshots[-self.pool.max_snapshots :]})

    def _load(self, path: str, meta: dict[str, Any]) -> None:
        """Continue the checkpoint ``path``: SB3's parameters and counters from the zip, the rest from
        ``.state.pkl``; the new config's options (opponents, PPO settings, intervals) apply from here."""
        try:
            with open(state_path(path), "rb") as f:
                state = pickle.load(f)
        except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, IndexError) as err:
            raise CheckpointError(f"{state_path(path)} cannot be read ({type(err).__name__}: {err}): is it cut short?") from None
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
            got = state.get("format") if isinstance(state, dict) else type(state).__name__
            raise CheckpointError(f"{state_path(path)}: format {got!r}, expected {STATE_FORMAT!r}")
        run = os.path.dirname(os.path.dirname(os.path.abspath(path)))  # RUN/checkpoints/step_N.zip
        model = self.model
        if self.pool is not None and state["pool"] is not None:
            self._load_pool(state["pool"], run)
        data, params, _ = load_from_zip_file(path, device="cpu", print_system_info=False)
        assert data is not None  # check_run found the record in this zip
        model.set_parameters(params, exact_match=True, device="cpu")
        for key in ("num_timesteps", "_n_updates", "_episode_num", "_last_obs", "_last_episode_starts",
                    "ep_info_buffer", "ep_success_buffer"):
            setattr(model, key, data[key])
        with _in_folder(run):  # seated snapshots read their files from this run's pool
            env_state = pickle.loads(state["env"])
            if isinstance(self.base_env, NertzVecEnv):
                self.base_env.load_state_dict(env_state)
            else:
                assert isinstance(self.base_env, DummyVecEnv)
                for e, s in zip(self.base_env.envs, env_state, strict=True):
                    e.load_state_dict(s)  # type: ignore[attr-defined]
        for key, value in state["monitor"].items():  # VecMonitor's accumulators of the rounds under way
            setattr(self.monitor, key, value)
        if self.shaping is not None:
            self.shaping.load_state_dict(state["shaping"])
        self.last_boundary = int(model.num_timesteps)  # the checkpoint's boundary: its periodic work is done
        self.checkpoints.append(path)
        # generators last: building the model and loading snapshots above may have drawn from them
        torch.set_rng_state(state["rng"]["torch"])
        np.random.set_state(state["rng"]["numpy"])  # noqa: NPY002 (SB3 shuffles minibatches with it)
        random.setstate(state["rng"]["python"])
        self.log(f"resumed from {path} at {model.num_timesteps} steps")


def format_report(report: dict[str, Any]) -> str:
    """The throughput report as text."""

    def num(x: Any, fmt: str) -> str:
        return "-" if x is None else format(x, fmt)

    lines = [
        f"throughput ({report['mode']} mode, {report['n_envs']} sub-envs, "
        f"{report['torch_threads']} torch thread(s)):",
        f"  {num(report['steps_per_second'], ',.0f')} transitions/s, "
        f"{num(report['table_ticks_per_second'], ',.0f')} table ticks/s "
        f"over {report['timesteps_timed']:,} transitions in {report['wall_seconds']:.1f} s "
        f"({report['boundary_seconds']:.1f} s of it evaluations and checkpoints, left out of the rates)",
        f"  time in the env (opponents included): {num(report['env_share'], '.1%')}; "
        f"rollouts (env + forward passes): {num(report['rollout_share'], '.1%')}; the rest is PPO updates",
        f"  final checkpoint: {report['checkpoint']}",
        f"  policy: {report['policy']}",
    ]
    return "\n".join(lines)
