"""The training configuration: one dataclass, read from a TOML or JSON file and overridden by flags.

Precedence, lowest first: the defaults below, the config stored in a checkpoint (``--resume``), the file
(``--config run.toml``), then command-line flags. Every field is a flag of ``nertz-train``
(``--num-tables 64``, ``--shaping/--no-shaping``); the dict and list fields take ``--rule draw=1``
(repeatable), ``--opponent heuristic=0.5`` (repeatable; replaces the whole mapping), ``--eval-opponents
random,heuristic`` and ``--net-arch 256,256``. A file looks like this (TOML)::

    mode = "vector"
    num_players = 4
    total_timesteps = 5_000_000
    shaping = true
    [rules]
    draw = 3
    [opponents]
    heuristic = 1.0
    search = 1.0

Unknown keys, values of the wrong kind or out of range, and options that cannot take effect with the others
(``num_envs`` in vector mode, ``opponents`` when every seat learns, ``shaping_scale`` without shaping, ...)
raise :class:`ConfigError` naming the key and what to pass instead: :meth:`TrainConfig.resolve`. What the run
adjusts (a default ``batch_size`` larger than a rollout, checkpoints and evaluations at rollout boundaries,
a budget rounded up to whole rollouts) is said in one line each before training starts.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nertz_env.config import make_config

MODES = ("vector", "single")
ACTIVATIONS = ("relu", "tanh")
LR_SCHEDULES = ("constant", "linear")

#: the value that turns each option off: set explicitly where it cannot take effect, it asks for what happens
#: anyway and passes (--opponent-threads 1, --no-snapshot-deterministic, --no-privileged-critic)
OFF: dict[str, Any] = {
    "learners_per_table": None,
    "opponent_threads": 1,
    "snapshot_weight": 0.0,
    "snapshot_every": 0,
    "snapshot_deterministic": False,
    "privileged_critic": False,
    "shaping_coef": None,
    "eval_every": 0,
    "keep_checkpoints": 0,
    "eval_opponents": [],
}


def _opt(default: Any = dataclasses.MISSING, help: str = "", factory: Any = dataclasses.MISSING) -> Any:
    """A field with its one-line meaning and allowed values in ``metadata["help"]`` (``nertz-train --help``
    shows it)."""
    if factory is not dataclasses.MISSING:
        return field(default_factory=factory, metadata={"help": help})
    return field(default=default, metadata={"help": help})


def help_of(name: str) -> str:
    """The one-line help of a :class:`TrainConfig` field."""
    return next(f.metadata["help"] for f in dataclasses.fields(TrainConfig) if f.name == name)


class ConfigError(ValueError):
    """A bad training config (unknown key, wrong type, value out of range, unreadable file)."""


@dataclass
class TrainConfig:
    """Everything a training run needs. Each field's ``metadata["help"]`` gives its meaning and allowed values
    (``nertz-train --help`` prints it); defaults suit a 2-core CPU."""

    # -- the table
    num_players: int = _opt(4, "seats at the table, 2 to 8")
    rules: dict[str, Any] = field(
        default_factory=dict,
        metadata={"help": "rules options of NertzConfig (not num_players), e.g. --rule draw=1 (repeat)"},
    )
    # -- the environment
    mode: str = _opt(
        "vector",
        "'vector': NertzVecEnv over the batched engine (self-play); 'single': the single-agent view, one "
        "learning seat among scripted opponents",
    )
    num_tables: int = _opt(64, "vector mode: tables stepped together, >= 1")
    learners_per_table: int | None = _opt(
        None, "vector mode: learning seats per table, 1 to num_players; none: every seat learns (self-play)"
    )
    opponent_threads: int = _opt(
        1, "vector mode: threads the scripted opponents decide in, >= 1 (2 on 2 cores)"
    )
    privileged_critic: bool = _opt(
        False,
        "vector mode: the value net also reads the table's global state (hidden cards included); the policy "
        "net never does, and policy files hold the policy over the observation alone",
    )
    num_envs: int = _opt(4, "single mode: single-agent envs in a DummyVecEnv, >= 1")
    # -- opponents (single mode, and vector mode with learners_per_table < num_players)
    opponents: dict[str, float] = field(
        default_factory=lambda: {"heuristic": 1.0},
        metadata={"help": "a pool opponent, SPEC or SPEC=WEIGHT (repeat; replaces the default pool)"},
    )
    snapshot_weight: float = _opt(0.0, "total pool weight of the frozen snapshots of the learner, >= 0")
    snapshot_every: int = _opt(
        0, "rollouts between snapshots, >= 0 (0: only the starting policy, added once)"
    )
    max_snapshots: int = _opt(10, "snapshots kept in the pool (oldest dropped), >= 0")
    snapshot_deterministic: bool = _opt(False, "snapshots play their argmax instead of sampling")
    # -- reward shaping, train-time only (see nertz_env.train.wrappers)
    shaping: bool = _opt(False, "add a potential-based reward for emptying the Nertz pile (train-time only)")
    shaping_scale: float = _opt(1.0, "multiplier of the shaping reward, > 0")
    shaping_gamma: float = _opt(
        1.0,
        "discount of the shaping potential, in (0, 1]; 1 keeps the shaped "
        "return a constant away from the score",
    )
    shaping_coef: float | None = _opt(
        None, "shaping potential per Nertz-pile card; none: the rules' nertz_penalty"
    )
    relative_reward: bool = _opt(False, "pay the score minus the rivals' mean score (train-time only)")
    # -- PPO (sb3-contrib MaskablePPO)
    total_timesteps: int = _opt(1_000_000, "learner transitions (agent steps) in all, >= 1")
    seed: int = _opt(0, "random seed of the run (deals, opponents, network init), 0 to 2**32 - 1")
    n_steps: int = _opt(
        64, "steps per sub-env per rollout, >= 1 (a rollout is n_steps x the sub-envs transitions)"
    )
    batch_size: int = _opt(1024, "PPO minibatch size in transitions, >= 2")
    n_epochs: int = _opt(4, "PPO passes over each rollout, >= 1")
    learning_rate: float = _opt(3e-4, "Adam learning rate, > 0 (the start value with lr_schedule linear)")
    lr_schedule: str = _opt("constant", "'constant' or 'linear' (falls to 0 at total_timesteps)")
    gamma: float = _opt(0.995, "discount factor, in (0, 1]")
    gae_lambda: float = _opt(0.95, "GAE lambda, in [0, 1]")
    clip_range: float = _opt(0.2, "PPO clipping of the policy ratio, > 0")
    ent_coef: float = _opt(0.01, "entropy bonus coefficient, >= 0")
    vf_coef: float = _opt(0.5, "value loss coefficient, >= 0")
    max_grad_norm: float = _opt(0.5, "gradient norm clip, > 0")
    net_arch: list[int] = field(
        default_factory=lambda: [256, 256],
        metadata={"help": "hidden layer widths of the policy and value nets, e.g. 256,256"},
    )
    activation: str = _opt("relu", "activation of the hidden layers: 'relu' or 'tanh'")
    # -- the run
    init_from: str | None = _opt(
        None, "start from this policy's weights (a policy.zip or checkpoint; not a resume); none: fresh"
    )
    run_dir: str = _opt("runs/nertz", "directory of the run's checkpoints, policy, logs and eval.csv")
    checkpoint_every: int = _opt(250_000, "timesteps between checkpoints, >= 0 (0: only the final one)")
    keep_checkpoints: int = _opt(0, "periodic checkpoints kept, >= 0 (0: all)")
    eval_every: int = _opt(250_000, "timesteps between evaluations, >= 0 (0: only after training)")
    eval_deals: int = _opt(
        50, "duplicate deals per baseline in an evaluation (each played from every seat), >= 0 (0: none)"
    )
    eval_opponents: list[str] = field(
        default_factory=lambda: ["random", "heuristic"],
        metadata={"help": "baseline agent specs to evaluate against, e.g. A,B"},
    )
    eval_seed: int = _opt(20_240_601, "seed of the evaluation deals, 0 to 2**32 - 1")
    eval_deterministic: bool = _opt(True, "the evaluated policy plays its argmax instead of sampling")
    eval_workers: int = _opt(1, "worker processes of an evaluation, >= 1")
    tensorboard: bool = _opt(True, "write TensorBoard logs under run_dir/tb")
    progress_bar: bool = _opt(True, "show a progress bar of the timesteps")
    torch_threads: int = _opt(1, "torch.set_num_threads, >= 1; 1 is fastest on a shared 2-core machine")
    verbose: int = _opt(0, "Stable-Baselines3 verbosity: 0, 1 or 2")

    # ------------------------------------------------------------------ building and checking
    @classmethod
    def from_dict(cls, data: Mapping[str, Any], base: TrainConfig | None = None) -> TrainConfig:
        """``base`` (default: the defaults) with the keys of ``data`` replaced, validated."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ConfigError(
                f"unknown training option(s) {unknown}; the options are: {', '.join(sorted(names))}"
            )
        cfg = dataclasses.replace(base or cls(), **{k: _copy(v) for k, v in data.items()})
        cfg.validate()
        return cfg

    def to_dict(self) -> dict[str, Any]:
        """Every option as a plain dict (what a checkpoint record and ``--print-config`` hold)."""
        return dataclasses.asdict(self)

    def validate(self) -> None:
        """Check every field's type and range; raises :class:`ConfigError` naming the field."""
        for f in dataclasses.fields(self):
            _check_type(f.name, getattr(self, f.name), f.type)
        if self.mode not in MODES:
            raise ConfigError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.activation not in ACTIVATIONS:
            raise ConfigError(f"activation must be one of {ACTIVATIONS}, got {self.activation!r}")
        if self.lr_schedule not in LR_SCHEDULES:
            raise ConfigError(f"lr_schedule must be one of {LR_SCHEDULES}, got {self.lr_schedule!r}")
        if "num_players" in self.rules:
            raise ConfigError("give the table size as num_players, not in rules")
        try:
            make_config(num_players=self.num_players, **self.rules)
        except ValueError as e:
            raise ConfigError(f"rules: {e}") from None
        positive = (
            "num_tables",
            "num_envs",
            "total_timesteps",
            "n_steps",
            "n_epochs",
            "torch_threads",
            "opponent_threads",
            "eval_workers",
        )
        for name in positive:
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.batch_size < 2:
            raise ConfigError(
                f"batch_size must be >= 2 (PPO normalizes advantages per minibatch), got {self.batch_size}"
            )
        for name in (
            "snapshot_every",
            "max_snapshots",
            "checkpoint_every",
            "keep_checkpoints",
            "eval_every",
            "eval_deals",
        ):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be >= 0, got {getattr(self, name)}")
        for name in ("seed", "eval_seed"):
            if not 0 <= getattr(self, name) < 2**32:
                raise ConfigError(f"{name} must be from 0 to 2**32 - 1, got {getattr(self, name)}")
        if not 0 <= self.verbose <= 2:
            raise ConfigError(f"verbose must be 0, 1 or 2, got {self.verbose}")
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if str(f.type).startswith("float") and value is not None and not math.isfinite(value):
                raise ConfigError(f"{f.name} must be a finite number, got {value!r}")
        ranges = (
            ("learning_rate", self.learning_rate > 0, "> 0"),
            ("gamma", 0 < self.gamma <= 1, "in (0, 1]"),
            ("gae_lambda", 0 <= self.gae_lambda <= 1, "in [0, 1]"),
            ("clip_range", self.clip_range > 0, "> 0"),
            ("ent_coef", self.ent_coef >= 0, ">= 0"),
            ("vf_coef", self.vf_coef >= 0, ">= 0"),
            ("max_grad_norm", self.max_grad_norm > 0, "> 0"),
            ("shaping_scale", self.shaping_scale > 0, "> 0 (to train without shaping: shaping = false)"),
            ("shaping_gamma", 0 < self.shaping_gamma <= 1, "in (0, 1]"),
            ("snapshot_weight", self.snapshot_weight >= 0, ">= 0"),
        )
        for name, ok, want in ranges:
            if not ok:
                raise ConfigError(f"{name} must be {want}, got {getattr(self, name)!r}")
        if self.learners_per_table is not None and not 1 <= self.learners_per_table <= self.num_players:
            raise ConfigError(
                f"learners_per_table must be from 1 to num_players={self.num_players} or None, "
                f"got {self.learners_per_table}"
            )
        if not self.net_arch or any(h < 1 for h in self.net_arch):
            raise ConfigError(f"net_arch must list positive layer widths, got {self.net_arch}")
        for spec, w in self.opponents.items():
            if not (math.isfinite(w) and w >= 0):
                raise ConfigError(f"opponents: the weight of {spec!r} must be a finite number >= 0, got {w!r}")
        if any(not s.strip() for s in [*self.opponents, *self.eval_opponents]):
            raise ConfigError("opponents and eval_opponents take agent specs such as 'heuristic', got ''")
        twice = sorted({s for s in self.eval_opponents if self.eval_opponents.count(s) > 1})
        if twice:
            raise ConfigError(f"eval_opponents names {', '.join(twice)} twice: each baseline is played once")

    @property
    def rollout_size(self) -> int:
        """Transitions per rollout (``n_steps`` x sub-envs): PPO trains in whole rollouts."""
        return self.n_steps * self.n_envs

    def planned_timesteps(self, start: int = 0) -> int:
        """The transitions a run trains to from ``start``: ``total_timesteps`` rounded up to whole rollouts
        (SB3 stops at the first rollout boundary at or past the total)."""
        left = self.total_timesteps - start
        if left <= 0:
            return start
        return start + -(-left // self.rollout_size) * self.rollout_size

    def resolve(self, given: Iterable[str] = (), resume: bool = False) -> tuple[TrainConfig, list[str]]:
        """Check that every option can take effect with the others; return the config as it will run and one
        line for each adjustment made or worth knowing.

        An option counts as set when it is in ``given`` (the keys a file or the flags named) or differs from
        its default. A set option that the chosen mode or the other options make meaningless raises
        :class:`ConfigError` naming it and what to pass instead (``num_envs`` in vector mode, ``opponents``
        when every seat learns, ``snapshot_every`` without ``snapshot_weight``, ``shaping_coef`` without
        ``shaping``, ``eval_seed`` with evaluation off, a ``batch_size`` larger than a rollout, ...). A
        default ``batch_size`` larger than a rollout is lowered to the rollout (said in the notes). Agent
        specs (``opponents``, ``eval_opponents``) are built once here, and ``init_from``'s record is checked
        against the table (not when ``resume``: a resumed run continues the checkpoint's weights), so a bad
        one fails before any work.
        """
        self.check_options(given)
        if self.uses_opponents:
            for spec in self.opponents:
                self._check_agent(spec, "opponents (--opponent)")
        set_ = self.options_set(given)
        evaluating = self.eval_deals > 0 and bool(self.eval_opponents)
        if evaluating:
            for spec in self.eval_opponents:
                self._check_agent(spec, "eval_opponents (--eval-opponents)")
        if self.init_from is not None and not resume:
            self._check_init_from()
        notes: list[str] = []
        if self.uses_opponents and self.snapshot_weight > 0 and self.snapshot_every == 0:
            notes.append(
                "snapshot_every = 0: the only snapshot in the pool is the starting policy (added once); "
                "give --snapshot-every N to add one every N rollouts"
            )
        cfg = self
        rollout = self.rollout_size
        how = f"n_steps {self.n_steps} x {self.n_envs} sub-envs = {rollout:,} transitions"
        if rollout < 2:
            raise ConfigError(f"a rollout of {how} is too small for PPO: raise --n-steps")
        if self.batch_size > rollout:
            if "batch_size" in set_:
                raise ConfigError(
                    f"batch_size {self.batch_size:,} is larger than a rollout ({how}), so it cannot take "
                    f"effect: pass --batch-size {rollout} or less, or raise --n-steps"
                )
            cfg = dataclasses.replace(self, batch_size=rollout)
            notes.append(
                f"batch_size: {rollout:,}, a whole rollout (the default {self.batch_size:,} is larger than a "
                f"rollout of {how})"
            )
        elif rollout % self.batch_size:
            notes.append(
                f"batch_size {self.batch_size:,} does not divide a rollout ({how}): the last minibatch of "
                f"each epoch has {rollout % self.batch_size:,} transitions"
            )
        periodic = ["checkpoint_every"] + (["eval_every"] if evaluating else [])
        end = self.planned_timesteps()
        past = [n for n in periodic if n in set_ and getattr(self, n) > end]
        if self.uses_opponents and self.snapshot_weight > 0 and self.snapshot_every * rollout > end:
            past.append("snapshot_every")
        if past:
            what = {"checkpoint_every": "the final checkpoint", "eval_every": "the final evaluation",
                    "snapshot_every": "the starting policy's snapshot"}
            notes.append(
                f"{' and '.join(past)} {'is' if len(past) == 1 else 'are'} past the end of the run "
                f"({end:,} transitions): the only one is {' and '.join(what[n] for n in past)}"
            )
        uneven = [f"{n} {getattr(self, n):,}" for n in periodic if getattr(self, n) % rollout and getattr(self, n) <= end]
        if uneven:
            notes.append(
                f"{' and '.join(uneven)}: not a multiple of a rollout ({rollout:,} transitions), so that "
                "work is done at the first rollout boundary at or past each multiple"
            )
        return cfg, notes

    def options_set(self, given: Iterable[str] = ()) -> set[str]:
        """The options that count as set: those in ``given`` (the keys a file or the flags named) and those
        that differ from their defaults. An unknown name in ``given`` raises :class:`ConfigError`."""
        defaults = TrainConfig()
        names = [f.name for f in dataclasses.fields(self)]
        explicit = set(given)
        unknown = sorted(explicit - set(names))
        if unknown:
            raise ConfigError(f"unknown training option(s) {unknown}")
        return explicit | {n for n in names if getattr(self, n) != getattr(defaults, n)}

    def options_active(self, given: Iterable[str] = (), off: Mapping[str, Any] | None = None) -> set[str]:
        """The options set (:meth:`options_set`) to something other than their value in ``off`` (default
        :data:`OFF`), the value that asks for what happens anyway: those that :meth:`check_options` refuses
        where they cannot take effect."""
        off = OFF if off is None else off
        return {n for n in self.options_set(given) if n not in off or getattr(self, n) != off[n]}

    def check_options(
        self,
        given: Iterable[str] = (),
        inert: list[tuple[tuple[str, ...], str]] | None = None,
        off: Mapping[str, Any] | None = None,
    ) -> None:
        """Raise :class:`ConfigError` for an option that is set (:meth:`options_set`) but cannot take effect:
        the first set one of each group of ``inert`` (default: :meth:`_inert`, the SB3 backend's), then an
        opponent pool that plays no one. An option set to its value in ``off`` (default :data:`OFF`) asks for
        what happens anyway and passes. A backend that reads fewer options passes its own groups and ``off``
        (``nertz-train --backend rllib``: :func:`nertz_env.train.rllib_backend.inert`)."""
        self.validate()
        active = self.options_active(given, off)
        for group, message in self._inert() if inert is None else inert:
            name = next((k for k in group if k in active), None)
            if name:
                raise ConfigError(f"{_show(name)} {message}")
        if self.uses_opponents:
            if self.snapshot_weight == 0 and sum(self.opponents.values()) <= 0:
                raise ConfigError(
                    "the opponent pool is empty: give an opponent a weight > 0 (--opponent heuristic=1) "
                    "or the snapshots one (--snapshot-weight 1)"
                )
            if self.snapshot_weight > 0 and self.max_snapshots == 0:
                raise ConfigError(
                    "snapshot_weight > 0 needs max_snapshots >= 1 (0 keeps no snapshot to play): "
                    "raise --max-snapshots, or pass --snapshot-weight 0"
                )

    def _check_init_from(self) -> None:
        """``init_from`` must be a policy file trained for these rules and this table size."""
        from nertz_env.agents.meta import check_compatible, read_meta

        try:
            check_compatible(
                read_meta(self.init_from or ""),
                make_config(num_players=self.num_players, **self.rules),
                where=f"init_from {self.init_from}",
            )
        except (FileNotFoundError, ValueError) as e:
            raise ConfigError(f"init_from (--init-from): {e}") from None

    def _check_agent(self, spec: str, where: str) -> None:
        """Build the agent of ``spec`` once: a bad name, parameter or missing file, or a trained policy
        for other rules or another table size, raises :class:`ConfigError`."""
        from nertz_env.agents import AgentSpecError, make_agent

        try:
            # agents refuse a table in reset: a trained policy (or a planner holding one) checks the rules,
            # table size and spaces it was trained for, as nertz-eval's check_agent does
            make_agent(spec).reset(make_config(num_players=self.num_players, **self.rules), 0, 0)
        except (AgentSpecError, FileNotFoundError, ValueError) as e:
            raise ConfigError(f"{where}: {e}") from None

    @property
    def n_envs(self) -> int:
        """Sub-envs of the VecEnv (transitions per step)."""
        if self.mode == "single":
            return self.num_envs
        return self.num_tables * (self.learners_per_table or self.num_players)

    def unused(self, inert: list[tuple[tuple[str, ...], str]] | None = None) -> list[str]:
        """The options that cannot take effect with the others (their values are never read): what
        ``--print-config`` leaves out. :meth:`resolve` refuses any of them set to a value other than the one
        that means "off" (``opponent_threads = 1``, ``snapshot_weight = 0``, ...). ``inert``: another
        backend's groups (default :meth:`_inert`, the SB3 backend's)."""
        groups = self._inert() if inert is None else inert
        return list(dict.fromkeys(name for names, _ in groups for name in names))

    def _inert(self, single_mode: bool = True) -> list[tuple[tuple[str, ...], str]]:
        """The groups of options that cannot take effect with the others, each with the error :meth:`resolve`
        raises when one of them is set (after the option's name, as files and flags spell it).
        ``single_mode=False``: a backend without mode 'single', whose messages do not offer it."""
        groups: list[tuple[tuple[str, ...], str]] = []
        if self.mode == "single":
            groups.append((
                ("num_tables", "learners_per_table", "opponent_threads", "privileged_critic"),
                "applies only to mode = 'vector' (mode 'single' runs num_envs single-agent envs, one "
                "learner each): remove it, or pass --mode vector",
            ))
        else:
            groups.append((
                ("num_envs",),
                "applies only to mode = 'single'; in mode 'vector' the sub-envs are num_tables x "
                "learners_per_table: set --num-tables instead, or pass --mode single",
            ))
        if not self.uses_opponents:
            lpt = "None (all)" if self.learners_per_table is None else str(self.learners_per_table)
            groups.append((
                ("opponents", "snapshot_weight", "snapshot_every", "max_snapshots", "snapshot_deterministic",
                 "opponent_threads"),
                f"has no effect: every seat learns (learners_per_table = {lpt} of num_players = "
                f"{self.num_players}), so no opponent is played; pass --learners-per-table 1 (up to "
                f"{self.num_players - 1}) to seat opponents{', or --mode single' if single_mode else ''}, or remove it",
            ))
        elif self.snapshot_weight == 0:
            groups.append((
                ("snapshot_every", "max_snapshots", "snapshot_deterministic"),
                "has no effect with snapshot_weight = 0 (no snapshot of the learner is played): give "
                "--snapshot-weight > 0, or remove it",
            ))
        if self.eval_deals == 0:
            groups.append((
                ("eval_opponents",),
                "has no effect with eval_deals = 0 (no evaluation): give --eval-deals > 0, or remove it",
            ))
        elif not self.eval_opponents:
            groups.append((
                ("eval_deals",),
                "has no effect with no eval_opponents: name the baselines (--eval-opponents "
                "heuristic,search), or pass --eval-deals 0",
            ))
        if self.eval_deals == 0 or not self.eval_opponents:
            groups.append((
                ("eval_every", "eval_seed", "eval_deterministic", "eval_workers"),
                f"has no effect: evaluation is off (eval_deals = {self.eval_deals}, eval_opponents = "
                f"{self.eval_opponents}); remove it, or turn evaluation on",
            ))
        if not self.shaping:
            groups.append((
                ("shaping_scale", "shaping_gamma", "shaping_coef"),
                "applies only with shaping = true: pass --shaping, or remove it",
            ))
        if self.checkpoint_every == 0:
            groups.append((
                ("keep_checkpoints",),
                "has no effect with checkpoint_every = 0 (only the final checkpoint is written): give "
                "--checkpoint-every > 0, or remove it",
            ))
        return groups

    @property
    def uses_opponents(self) -> bool:
        """Whether some seats are played by opponents (single mode, or fewer learners than players)."""
        return self.mode == "single" or (self.learners_per_table or self.num_players) < self.num_players


_FLAGS = {"opponents": "--opponent", "rules": "--rule"}


def _show(name: str) -> str:
    """``snapshot_every`` -> ``snapshot_every (--snapshot-every)``: the key as files and flags spell it."""
    return f"{name} ({_FLAGS.get(name, '--' + name.replace('_', '-'))})"


def _copy(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _copy(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_copy(x) for x in v]
    return v


def _check_type(name: str, value: Any, annotation: Any) -> None:
    text = str(annotation)
    optional = "None" in text
    if value is None:
        if not optional:
            raise ConfigError(f"{name} must not be empty (None)")
        return
    base = text.split("|")[0].strip()

    def bad(kind: str) -> ConfigError:
        return ConfigError(f"{name} must be {kind}, got {value!r}")

    if base == "bool":
        if not isinstance(value, bool):
            raise bad("true or false")
    elif base == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad("an integer")
    elif base == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad("a number")
    elif base == "str":
        if not isinstance(value, str):
            raise bad("a string")
    elif base.startswith("dict[str, float]"):
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool)
            for k, v in value.items()
        ):
            raise bad("a table of agent spec = weight")
    elif base.startswith("dict"):
        if not isinstance(value, dict):
            raise bad("a table (mapping)")
    elif base == "list[int]":
        if not isinstance(value, list) or not all(
            isinstance(x, int) and not isinstance(x, bool) for x in value
        ):
            raise bad("a list of integers")
    elif base == "list[str]" and (not isinstance(value, list) or not all(isinstance(x, str) for x in value)):
        raise bad("a list of strings")


def shipped_configs() -> dict[str, str]:
    """The configs shipped with the package (``train/configs/*.toml`` in the repository, package data of
    ``nertz_env.train`` when installed): name (file stem) -> path."""
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs")
    try:
        files = sorted(os.listdir(folder))
    except OSError:
        return {}
    return {f[: -len(".toml")]: os.path.join(folder, f) for f in files if f.endswith(".toml")}


def resolve_config_path(path: str) -> str:
    """``--config``'s file: a path that exists, else a shipped config by name (``long_run`` or
    ``long_run.toml``; ``train/configs/long_run.toml`` too, the repository path the docs show)."""
    if os.path.isfile(path):
        return path
    shipped = shipped_configs()
    name = os.path.basename(path)
    name = name[: -len(".toml")] if name.endswith(".toml") else name
    in_repo_folder = os.path.dirname(path).replace("\\", "/").rstrip("/") in ("", "configs", "train/configs")
    if in_repo_folder and name in shipped:
        return shipped[name]
    names = ", ".join(shipped) or "none found"
    raise ConfigError(f"config file not found: {path} (a file, or a shipped config by name: {names})")


def read_config_file(path: str) -> dict[str, Any]:
    """The options in a ``.toml`` or ``.json`` file (not yet validated; see :meth:`TrainConfig.from_dict`).
    ``path`` may also name a shipped config (:func:`resolve_config_path`)."""
    path = resolve_config_path(path)
    ext = os.path.splitext(path)[1].lower()
    try:
        if ext == ".toml":
            # tomllib is in the standard library from Python 3.11; on 3.10 the tomli package provides it
            name = "tomllib" if sys.version_info >= (3, 11) else "tomli"
            try:
                toml = importlib.import_module(name)
            except ImportError:
                raise ConfigError(
                    f"reading {path} needs Python 3.11+ or `pip install tomli`; or use JSON"
                ) from None
            with open(path, "rb") as f:
                data = toml.load(f)
        elif ext == ".json":
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        else:
            raise ConfigError(f"config file {path}: use a .toml or .json file, got {ext or 'no extension'!r}")
    except (ValueError, OSError) as e:
        if isinstance(e, ConfigError):
            raise
        raise ConfigError(f"config file {path} could not be read: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a table of options")
    return data
