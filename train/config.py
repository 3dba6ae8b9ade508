"""The training configuration: typed sections (``[vector]``, ``[single]``, ``[pool]``, ``[shaping]``,
``[evaluation]``), read from a TOML or JSON file and overridden by flags. A section exists only where it takes
effect; an option of an absent section is refused in one line unless it is at its default. Precedence, lowest
first: the defaults, a resumed checkpoint's stored config, the file (``--config``), the flags. See
docs/guides/training-sb3.md ("Config files").
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nertz_env.config import make_config

MODES = ("vector", "single")
ACTIVATIONS = ("relu", "tanh")
LR_SCHEDULES = ("constant", "linear")
POLICIES = ("flat", "moves")


def _opt(default: Any, help: str) -> Any:
    """A field with its one-line meaning and allowed values in ``metadata["help"]`` (``nertz-train --help``)."""
    return field(default=default, metadata={"help": help})


class ConfigError(ValueError):
    """A bad training config (unknown key, wrong type, value out of range, unreadable file)."""


@dataclass
class Vector:
    """``[vector]``: NertzVecEnv over the batched engine."""

    num_tables: int = _opt(64, "tables stepped together, >= 1")
    learners_per_table: int | None = _opt(
        None, "learning seats per table, 1 to num_players; none: every seat learns (self-play)"
    )
    opponent_threads: int = _opt(1, "threads the scripted opponents decide in, >= 1 (2 on 2 cores)")
    privileged_critic: bool = _opt(
        False,
        "the value net also reads the table's global state (hidden cards included); the policy net never "
        "does, and policy files hold the policy over the observation alone",
    )


@dataclass
class Single:
    """``[single]``: the single-agent view, one learning seat among the pool's opponents."""

    num_envs: int = _opt(4, "single-agent envs in a DummyVecEnv, >= 1")


@dataclass
class Pool:
    """``[pool]``: who plays the seats that do not learn (mode single, or learners_per_table < num_players)."""

    opponents: dict[str, float] = field(default_factory=lambda: {"heuristic": 1.0}, metadata={"help": "a pool opponent, SPEC or SPEC=WEIGHT (repeat; replaces the default pool)"})
    snapshot_weight: float = _opt(0.0, "total pool weight of the frozen snapshots of the learner, >= 0")
    snapshot_every: int = _opt(0, "rollouts between snapshots, >= 0 (0: only the starting policy, added once)")
    max_snapshots: int = _opt(10, "snapshots kept in the pool (oldest dropped), >= 1")
    snapshot_deterministic: bool = _opt(False, "snapshots play their argmax instead of sampling")


@dataclass
class Shaping:
    """``[shaping]``: a potential-based reward for emptying the Nertz pile (train-time only)."""

    scale: float = _opt(1.0, "multiplier of the shaping reward, > 0")
    gamma: float = _opt(
        1.0, "discount of the shaping potential, in (0, 1]; 1 keeps the shaped return a constant away from the score"
    )
    coef: float | None = _opt(None, "shaping potential per Nertz-pile card; none: the rules' nertz_penalty")


@dataclass
class Evaluation:
    """``[evaluation]``: the policy played against baselines during training (eval.csv, TensorBoard eval/*)."""

    every: int = _opt(250_000, "timesteps between evaluations, >= 0 (0: only after training)")
    deals: int = _opt(
        50, "duplicate deals per baseline (each played from every seat), >= 0 (0: no evaluation)"
    )
    opponents: list[str] = field(default_factory=lambda: ["random", "heuristic"], metadata={"help": "a baseline agent spec to evaluate against (repeat; replaces the default baselines)"})
    seed: int = _opt(20_240_601, "seed of the evaluation deals, 0 to 2**32 - 1")
    deterministic: bool = _opt(True, "the evaluated policy plays its argmax instead of sampling")
    workers: int = _opt(1, "worker processes of an evaluation, >= 1")


#: the sections and, for each, the top-level key (and flag) of each of its options
SECTIONS: dict[str, tuple[type, dict[str, str]]] = {
    "vector": (Vector, {f: f for f in ("num_tables", "learners_per_table", "opponent_threads", "privileged_critic")}),
    "single": (Single, {"num_envs": "num_envs"}),
    "pool": (Pool, {f: f for f in ("opponents", "snapshot_weight", "snapshot_every", "max_snapshots",
                                   "snapshot_deterministic")}),
    "shaping": (Shaping, {"scale": "shaping_scale", "gamma": "shaping_gamma", "coef": "shaping_coef"}),
    "evaluation": (Evaluation, {f: f"eval_{f}" for f in ("every", "deals", "opponents", "seed", "deterministic",
                                                          "workers")}),
}
#: the options only the SB3 backend reads (``--backend rllib`` has no flag for them and refuses them set)
SB3_ONLY = (
    "mode", "num_envs", "opponent_threads", "privileged_critic", "snapshot_deterministic", "shaping",
    "shaping_scale", "shaping_gamma", "shaping_coef", "relative_reward", "lr_schedule", "activation", "init_from",
    "keep_checkpoints", "progress_bar", "policy", "move_arch", "evaluation", "eval_every", "eval_deals", "eval_opponents", "eval_seed",
    "eval_deterministic", "eval_workers",
)


@dataclass
class TrainConfig:
    """Everything a training run needs (see the module docstring). Build it with :meth:`from_dict`, which
    checks it; defaults suit a 2-core CPU."""

    num_players: int = _opt(4, "seats at the table, 2 to 8")
    rules: dict[str, Any] = field(default_factory=dict, metadata={"help": "rules options of NertzConfig (not num_players), e.g. --rule draw=1 (repeat)"})
    vector: Vector | None = field(default_factory=Vector)
    single: Single | None = None
    pool: Pool | None = None
    shaping: Shaping | None = None
    relative_reward: bool = _opt(False, "pay the score minus the rivals' mean score (train-time only)")
    # -- PPO (sb3-contrib MaskablePPO)
    total_timesteps: int = _opt(1_000_000, "learner transitions (agent steps) in all, >= 1")
    seed: int = _opt(0, "random seed of the run (deals, opponents, network init), 0 to 2**32 - 1")
    n_steps: int = _opt(64, "steps per sub-env per rollout, >= 1 (a rollout is n_steps x the sub-envs transitions)")
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
    net_arch: list[int] = field(default_factory=lambda: [256, 256], metadata={"help": "hidden layer widths of the policy and value nets, e.g. 256,256"})
    activation: str = _opt("relu", "activation of the hidden layers: 'relu' or 'tanh'")
    policy: str = _opt("flat", "'flat': one output per action; 'moves': each legal move scored by one network from "
                       "its features (nertz_env.move_features)")
    move_arch: list[int] = field(default_factory=lambda: [128], metadata={"help": "policy moves: hidden layer widths of the network that scores a move, e.g. 128"})
    # -- the run
    init_from: str | None = _opt(
        None, "start from this policy's weights (a policy.zip or checkpoint; not a resume); none: fresh"
    )
    run_dir: str = _opt("runs/nertz", "directory of the run's checkpoints, policy, logs and eval.csv")
    checkpoint_every: int = _opt(250_000, "timesteps between checkpoints, >= 0 (0: only the final one)")
    keep_checkpoints: int = _opt(0, "periodic checkpoints kept, >= 0 (0: all)")
    evaluation: Evaluation | None = field(default_factory=Evaluation)
    tensorboard: bool = _opt(True, "write TensorBoard logs under run_dir/tb")
    progress_bar: bool = _opt(True, "show a progress bar of the timesteps")
    torch_threads: int | None = _opt(None, "torch threads, >= 1; none: the CPUs this process may use")
    verbose: int = _opt(0, "Stable-Baselines3 verbosity: 0, 1 or 2")

    # ------------------------------------------------------------------ building and checking
    @classmethod
    def from_dict(cls, data: Mapping[str, Any], base: TrainConfig | None = None) -> TrainConfig:
        """``base`` (default: the defaults) with the options of ``data`` (sections as tables, or the flags'
        top-level keys) replaced, checked."""
        flat = (base or cls()).flat()
        given: set[str] = set()
        for key, value in data.items():
            if key in SECTIONS and isinstance(value, Mapping):
                names = SECTIONS[key][1]
                for k, v in value.items():
                    if k not in names:
                        raise ConfigError(f"[{key}] has no option {k!r}; it has: {', '.join(names)}")
                    flat[names[k]] = _copy(v)
                    given.add(names[k])
                switch = {"vector": ("mode", "vector"), "single": ("mode", "single")}.get(key, (key, True))
                if key != "pool":
                    flat[switch[0]] = switch[1]
            elif key in flat:
                flat[key] = _copy(value)
                given.add(key)
            else:
                raise ConfigError(f"unknown training option {key!r}; the options are: {', '.join(sorted(flat))}")
        return cls._build(flat, given)

    def flat(self) -> dict[str, Any]:
        """Every option under its top-level key (the flag's name), sections' switches included: ``mode``,
        ``shaping`` and ``evaluation`` (true/false)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.name not in SECTIONS:
                out[f.name] = _copy(getattr(self, f.name))
        for name, (kind, names) in SECTIONS.items():
            section = getattr(self, name) or kind()
            out.update({flag: _copy(getattr(section, k)) for k, flag in names.items()})
        out.update(mode=self.mode, shaping=self.shaping is not None, evaluation=self.evaluation is not None)
        return out

    @classmethod
    def _build(cls, flat: dict[str, Any], given: set[str]) -> TrainConfig:
        """Refuse an inert option given in this layer; drop one a lower layer gave (a flag turning a section
        off wins over the file's section)."""
        for name in ("mode", "shaping", "evaluation"):
            _check_type(name, flat[name], "str" if name == "mode" else "bool")
        if flat["mode"] not in MODES:
            raise ConfigError(f"mode must be one of {MODES}, got {flat['mode']!r}")
        top = {f.name: flat[f.name] for f in dataclasses.fields(cls) if f.name not in SECTIONS}
        for f in dataclasses.fields(cls):
            if f.name in top:
                _check_type(f.name, top[f.name], f.type)
        sections = {}
        for name, (kind, names) in SECTIONS.items():
            for f in dataclasses.fields(kind):
                _check_type(names[f.name], flat[names[f.name]], f.type)
            sections[name] = kind(**{k: flat[flag] for k, flag in names.items()})
        vector = sections["vector"]
        if flat["mode"] == "vector" and vector.learners_per_table is not None and not (
            1 <= vector.learners_per_table <= top["num_players"]
        ):
            raise ConfigError(
                f"learners_per_table must be from 1 to num_players={top['num_players']} or none, "
                f"got {vector.learners_per_table}"
            )
        opponents = flat["mode"] == "single" or (vector.learners_per_table or top["num_players"]) < top["num_players"]
        evaluation = sections["evaluation"]
        evaluating = flat["evaluation"] and evaluation.deals > 0 and bool(evaluation.opponents)
        every_seat = "every seat learns (learners_per_table none), so no opponent is played: pass --learners-per-table 1"
        on = {
            "vector": (flat["mode"] == "vector", "applies only to mode vector: pass --mode vector, or remove it"),
            "single": (flat["mode"] == "single", "applies only to mode single: pass --mode single, or remove it"),
            "pool": (opponents, f"has no effect: {every_seat}, or remove it"),
            "shaping": (flat["shaping"], "applies only with shaping on: pass --shaping, or remove it"),
            "evaluation": (evaluating, "has no effect with evaluation off (eval_deals 0 or no eval_opponents): "
                                       "remove it, or turn evaluation on"),
        }
        # an evaluation's own off switches, and every = 0 ("none during training") with it off
        switches = {"eval_deals", "eval_opponents"} | ({"eval_every"} if evaluation.every == 0 else set())
        for name, (kind, names) in SECTIONS.items():
            present, why = on[name]
            if not present:
                _refuse_if_set(sections[name], kind(), names, why, given - switches)
                sections[name] = None
        if sections["vector"] is not None and not opponents:
            why = f"has no effect: {every_seat}, or remove it"
            _refuse_if_set(vector, Vector(), {"opponent_threads": "opponent_threads"}, why, given)
            vector.opponent_threads = 1
        pool = sections["pool"]
        if pool is not None and pool.snapshot_weight == 0:
            why = "has no effect with snapshot_weight 0: give --snapshot-weight > 0, or remove it"
            inert = {k: k for k in ("snapshot_every", "max_snapshots", "snapshot_deterministic")}
            _refuse_if_set(pool, Pool(), inert, why, given)
            sections["pool"] = dataclasses.replace(Pool(), opponents=pool.opponents)
        if top["checkpoint_every"] == 0:
            if top["keep_checkpoints"] != 0 and "keep_checkpoints" in given:
                raise ConfigError(
                    "keep_checkpoints (--keep-checkpoints) has no effect with checkpoint_every 0 (only the final "
                    "checkpoint): give --checkpoint-every > 0, or remove it"
                )
            top["keep_checkpoints"] = 0
        if top["policy"] != "moves" and "move_arch" in given and top["move_arch"] != [128]:
            raise ConfigError("move_arch (--move-arch) applies only to policy moves: pass --policy moves, or remove it")
        cfg = cls(**top, **sections)
        cfg.validate()
        return cfg

    def to_dict(self) -> dict[str, Any]:
        """The options as plain data, shaping and evaluation when off too (what a checkpoint and ``--print-config``
        hold; :meth:`from_dict` reads it back whatever the defaults: the other absent sections follow from it)."""
        out = {k: v for k, v in dataclasses.asdict(self).items() if v is not None or k not in SECTIONS}
        return {"shaping": False, "evaluation": {"deals": 0}, **out}

    @property
    def mode(self) -> str:
        """``"single"`` with a ``[single]`` section (the single-agent view), else ``"vector"``."""
        return "single" if self.single is not None else "vector"

    def validate(self) -> None:
        """Check every value's range; raises :class:`ConfigError` naming the option."""
        if self.activation not in ACTIVATIONS:
            raise ConfigError(f"activation must be one of {ACTIVATIONS}, got {self.activation!r}")
        if self.policy not in POLICIES:
            raise ConfigError(f"policy must be one of {POLICIES}, got {self.policy!r}")
        if self.lr_schedule not in LR_SCHEDULES:
            raise ConfigError(f"lr_schedule must be one of {LR_SCHEDULES}, got {self.lr_schedule!r}")
        if "num_players" in self.rules:
            raise ConfigError("give the table size as num_players, not in rules")
        try:
            make_config(num_players=self.num_players, **self.rules)
        except ValueError as e:
            raise ConfigError(f"rules: {e}") from None
        flat = self.flat()
        for name in ("num_tables", "num_envs", "total_timesteps", "n_steps", "n_epochs", "opponent_threads",
                     "eval_workers"):
            if flat[name] < 1:
                raise ConfigError(f"{name} must be >= 1, got {flat[name]}")
        if self.torch_threads is not None and self.torch_threads < 1:
            raise ConfigError(f"torch_threads must be >= 1 or none, got {self.torch_threads}")
        if self.batch_size < 2:
            raise ConfigError(
                f"batch_size must be >= 2 (PPO normalizes advantages per minibatch), got {self.batch_size}"
            )
        for name in ("snapshot_every", "checkpoint_every", "keep_checkpoints", "eval_every", "eval_deals"):
            if flat[name] < 0:
                raise ConfigError(f"{name} must be >= 0, got {flat[name]}")
        for name in ("seed", "eval_seed"):
            if not 0 <= flat[name] < 2**32:
                raise ConfigError(f"{name} must be from 0 to 2**32 - 1, got {flat[name]}")
        if not 0 <= self.verbose <= 2:
            raise ConfigError(f"verbose must be 0, 1 or 2, got {self.verbose}")
        for name, value in flat.items():
            if isinstance(value, float) and not math.isfinite(value):
                raise ConfigError(f"{name} must be a finite number, got {value!r}")
        ranges = (
            ("learning_rate", flat["learning_rate"] > 0, "> 0"),
            ("gamma", 0 < flat["gamma"] <= 1, "in (0, 1]"),
            ("gae_lambda", 0 <= flat["gae_lambda"] <= 1, "in [0, 1]"),
            ("clip_range", flat["clip_range"] > 0, "> 0"),
            ("ent_coef", flat["ent_coef"] >= 0, ">= 0"),
            ("vf_coef", flat["vf_coef"] >= 0, ">= 0"),
            ("max_grad_norm", flat["max_grad_norm"] > 0, "> 0"),
            ("shaping_scale", flat["shaping_scale"] > 0, "> 0 (to train without shaping: shaping = false)"),
            ("shaping_gamma", 0 < flat["shaping_gamma"] <= 1, "in (0, 1]"),
            ("snapshot_weight", flat["snapshot_weight"] >= 0, ">= 0"),
        )
        for name, ok, want in ranges:
            if not ok:
                raise ConfigError(f"{name} must be {want}, got {flat[name]!r}")
        for name in ("net_arch", "move_arch"):
            if not flat[name] or any(h < 1 for h in flat[name]):
                raise ConfigError(f"{name} must list positive layer widths, got {flat[name]}")
        for spec, w in flat["opponents"].items():
            if not (math.isfinite(w) and w >= 0):
                raise ConfigError(f"opponents: the weight of {spec!r} must be a finite number >= 0, got {w!r}")
        if any(not s.strip() for s in [*flat["opponents"], *flat["eval_opponents"]]):
            raise ConfigError("opponents and eval_opponents take agent specs such as 'heuristic', got ''")
        twice = sorted({s for s in flat["eval_opponents"] if flat["eval_opponents"].count(s) > 1})
        if twice:
            raise ConfigError(f"eval_opponents names {', '.join(twice)} twice: each baseline is played once")
        if self.pool is not None:
            if self.pool.snapshot_weight == 0 and sum(self.pool.opponents.values()) <= 0:
                raise ConfigError(
                    "the opponent pool is empty: give an opponent a weight > 0 (--opponent heuristic=1) "
                    "or the snapshots one (--snapshot-weight 1)"
                )
            if self.pool.snapshot_weight > 0 and self.pool.max_snapshots < 1:
                raise ConfigError("max_snapshots must be >= 1 with snapshot_weight > 0 (0 keeps no snapshot to play)")

    @property
    def learners(self) -> int:
        """Learning seats per table (1 in mode single)."""
        if self.vector is None:
            return 1
        return self.vector.learners_per_table or self.num_players

    @property
    def n_envs(self) -> int:
        """Sub-envs of the VecEnv (transitions per step)."""
        if self.single is not None:
            return self.single.num_envs
        assert self.vector is not None
        return self.vector.num_tables * self.learners

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

    def resolve(self, resume: bool = False) -> tuple[TrainConfig, list[str]]:
        """Check what needs the agents and files (agent specs are built once, ``init_from``'s record is read
        unless ``resume``) and return the config as it will run with one line for each adjustment: a default
        ``batch_size`` larger than a rollout is lowered to it; a larger one given is refused."""
        if self.pool is not None:
            for spec in self.pool.opponents:
                self._check_agent(spec, "opponents (--opponent)")
        if self.evaluation is not None:
            for spec in self.evaluation.opponents:
                self._check_agent(spec, "eval_opponents (--eval-opponent)")
        if self.init_from is not None and not resume:
            self._check_init_from()
        notes: list[str] = []
        if self.pool is not None and self.pool.snapshot_weight > 0 and self.pool.snapshot_every == 0:
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
            if self.batch_size != TrainConfig.batch_size:
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
        flat, end = self.flat(), self.planned_timesteps()
        periodic = ["checkpoint_every"] + (["eval_every"] if self.evaluation is not None else [])
        past = [n for n in periodic if flat[n] > end]
        if self.pool is not None and self.pool.snapshot_weight > 0 and self.pool.snapshot_every * rollout > end:
            past.append("snapshot_every")
        if past:
            what = {"checkpoint_every": "the final checkpoint", "eval_every": "the final evaluation",
                    "snapshot_every": "the starting policy's snapshot"}
            notes.append(
                f"{' and '.join(past)} {'is' if len(past) == 1 else 'are'} past the end of the run "
                f"({end:,} transitions): the only one is {' and '.join(what[n] for n in past)}"
            )
        uneven = [f"{n} {flat[n]:,}" for n in periodic if flat[n] % rollout and flat[n] <= end]
        if uneven:
            notes.append(
                f"{' and '.join(uneven)}: not a multiple of a rollout ({rollout:,} transitions), so that "
                "work is done at the first rollout boundary at or past each multiple"
            )
        return cfg, notes

    def _check_init_from(self) -> None:
        """``init_from`` must be a policy file trained for these rules and this table size."""
        from nertz_env.agents.meta import check_compatible, read_meta

        try:
            check_compatible(
                read_meta(self.init_from or ""),
                make_config(num_players=self.num_players, **self.rules),
                where=f"init_from {self.init_from}",
                path=self.init_from,
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


def options() -> list[tuple[str, Any, Any, str]]:
    """Every option as a flag sees it: (top-level key, type, default, help), in the order of the dataclasses."""
    default = TrainConfig().flat()
    out: list[tuple[str, Any, Any, str]] = [
        ("mode", "str", "vector", "'vector': NertzVecEnv over the batched engine; 'single': the single-agent view, "
         "one learning seat among the pool's opponents"),
        ("shaping", "bool", False, Shaping.__doc__.split(": ", 1)[1].rstrip(".") if Shaping.__doc__ else ""),
        ("evaluation", "bool", True, "evaluate the policy during and after training (eval.csv)"),
    ]
    for f in dataclasses.fields(TrainConfig):
        if f.name not in SECTIONS:
            out.append((f.name, f.type, default[f.name], f.metadata["help"]))
    for kind, names in SECTIONS.values():
        for f in dataclasses.fields(kind):
            out.append((names[f.name], f.type, default[names[f.name]], f.metadata["help"]))
    return out


def flag_of(name: str) -> str:
    """``snapshot_every`` -> ``--snapshot-every``; a list's flag repeats: ``opponents`` -> ``--opponent``."""
    lists = {"opponents": "--opponent", "eval_opponents": "--eval-opponent", "rules": "--rule"}
    return lists.get(name, "--" + name.replace("_", "-"))


def _refuse_if_set(section: Any, default: Any, names: Mapping[str, str], why: str, given: set[str]) -> None:
    """Raise :class:`ConfigError` for the first inert option in ``given`` that is not at its default."""
    for k, flag in names.items():
        if flag in given and getattr(section, k) != getattr(default, k):
            raise ConfigError(f"{flag} ({flag_of(flag)}) {why}")


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
    except (ValueError, OSError, RecursionError) as e:  # RecursionError: JSON nested thousands deep
        if isinstance(e, ConfigError):
            raise
        raise ConfigError(f"config file {path} could not be read: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a table of options")
    return data
