"""The training configuration: typed sections (``[vector]``, ``[single]``, ``[pool]``, ``[shaping]``,
``[evaluation]``), read from a TOML or JSON file and overridden by flags. A section exists only where it takes
effect; an option of an absent section is refused in one line unless it is at its default. Precedence, lowest
first: the defaults, a resumed checkpoint's stored config, the file (``--config``), the flags. See
docs/guides/training-sb3.md ("Config files").
"""

from __future__ import annotations

import dataclasses
import glob
import importlib
import json
import math
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import UnionType
from typing import Any, Literal, NamedTuple, Union, get_args, get_origin, get_type_hints

from nertz_env.config import make_config

Mode = Literal["vector", "single"]
MODES: tuple[str, ...] = get_args(Mode)

#: the ranges an option may name: the words its help and its error say -> the test of a value
RANGES: dict[str, Callable[[Any], bool]] = {
    ">= 0": lambda v: v >= 0,
    ">= 1": lambda v: v >= 1,
    ">= 2": lambda v: v >= 2,
    "> 0": lambda v: v > 0,
    "in (0, 1]": lambda v: 0 < v <= 1,
    "in [0, 1]": lambda v: 0 <= v <= 1,
    "from 0 to 2**32 - 1": lambda v: 0 <= v < 2**32,
    "0, 1 or 2": lambda v: v in (0, 1, 2),
}


def _meta(help: str, want: str | None = None) -> dict[str, Any]:
    """A field's one-line meaning (``nertz-train --help``) and the range its value must be in."""
    assert want is None or want in RANGES
    return {"help": f"{help}, {want}" if want else help, "want": want}


def _opt(default: Any, help: str, want: str | None = None) -> Any:
    return field(default=default, metadata=_meta(help, want))


class ConfigError(ValueError):
    """A bad training config (unknown key, wrong type, value out of range, unreadable file)."""


@dataclass
class Vector:
    """``[vector]``: NertzVecEnv over the batched engine."""

    num_tables: int = _opt(64, "tables stepped together", ">= 1")
    learners_per_table: int | None = _opt(
        None, "learning seats per table, 1 to num_players; none: every seat learns (self-play)"
    )
    opponent_threads: int = _opt(1, "threads the scripted opponents decide in (2 on 2 cores)", ">= 1")
    privileged_critic: bool = _opt(
        False,
        "the value net also reads the table's global state (hidden cards included); the policy net never "
        "does, and policy files hold the policy over the observation alone",
    )


@dataclass
class Single:
    """``[single]``: the single-agent view, one learning seat among the pool's opponents."""

    num_envs: int = _opt(4, "single-agent envs in a DummyVecEnv", ">= 1")


@dataclass
class Pool:
    """``[pool]``: who plays the seats that do not learn (mode single, or learners_per_table < num_players)."""

    opponents: dict[str, float] = field(
        default_factory=lambda: {"heuristic": 1.0},
        metadata=_meta("a pool opponent, SPEC or SPEC=WEIGHT (repeat; replaces the default pool)"),
    )
    snapshot_weight: float = _opt(0.0, "total pool weight of the frozen snapshots of the learner", ">= 0")
    snapshot_every: int = _opt(
        0, "rollouts between snapshots (0: only the starting policy, added once)", ">= 0"
    )
    max_snapshots: int = _opt(10, "snapshots kept in the pool (oldest dropped)", ">= 1")
    snapshot_deterministic: bool = _opt(False, "snapshots play their argmax instead of sampling")


@dataclass
class Shaping:
    """``[shaping]``: a potential-based reward for emptying the Nertz pile (train-time only)."""

    scale: float = _opt(1.0, "multiplier of the shaping reward (to train without it: shaping = false)", "> 0")
    gamma: float = _opt(
        1.0,
        "discount of the shaping potential (1 keeps the shaped return a constant away from the score)",
        "in (0, 1]",
    )
    coef: float | None = _opt(None, "shaping potential per Nertz-pile card; none: the rules' nertz_penalty")


@dataclass
class Evaluation:
    """``[evaluation]``: the policy played against baselines during training (eval.csv, TensorBoard eval/*)."""

    every: int = _opt(250_000, "timesteps between evaluations (0: only after training)", ">= 0")
    deals: int = _opt(
        50, "duplicate deals per baseline, each played from every seat (0: no evaluation)", ">= 0"
    )
    opponents: list[str] = field(
        default_factory=lambda: ["random", "heuristic"],
        metadata=_meta("a baseline agent spec to evaluate against (repeat; replaces the default baselines)"),
    )
    seed: int = _opt(20_240_601, "seed of the evaluation deals", "from 0 to 2**32 - 1")
    deterministic: bool = _opt(True, "the evaluated policy plays its argmax instead of sampling")
    workers: int = _opt(1, "worker processes of an evaluation", ">= 1")


#: the sections and the prefix of their options' top-level keys (and flags): ``[shaping] scale`` is shaping_scale
SECTIONS: dict[str, tuple[type, str]] = {
    "vector": (Vector, ""),
    "single": (Single, ""),
    "pool": (Pool, ""),
    "shaping": (Shaping, "shaping_"),
    "evaluation": (Evaluation, "eval_"),
}
#: why an option is refused where what it needs is off: a section, or the option named
_INERT = {
    "vector": "applies only to mode vector: pass --mode vector, or remove it",
    "single": "applies only to mode single: pass --mode single, or remove it",
    "pool": "has no effect: every seat learns (learners_per_table none), so no opponent is played: pass "
    "--learners-per-table 1, or remove it",
    "shaping": "applies only with shaping on: pass --shaping, or remove it",
    "evaluation": "has no effect with evaluation off (eval_deals 0 or no eval_opponents): remove it, or turn "
    "evaluation on",
    "snapshot_weight": "has no effect with snapshot_weight 0: give --snapshot-weight > 0, or remove it",
    "checkpoint_every": "has no effect with checkpoint_every 0 (only the final checkpoint): give "
    "--checkpoint-every > 0, or remove it",
    "policy": "applies only to policy moves: pass --policy moves, or remove it",
}


@dataclass
class TrainConfig:
    """Everything a training run needs (see the module docstring). Build it with :meth:`from_dict`, which
    checks it; defaults suit a 2-core CPU."""

    num_players: int = _opt(4, "seats at the table, 2 to 8")
    rules: dict[str, Any] = field(
        default_factory=dict,
        metadata=_meta("rules options of NertzConfig (not num_players), e.g. --rule draw=1 (repeat)"),
    )
    vector: Vector | None = field(default_factory=Vector)
    single: Single | None = None
    pool: Pool | None = None
    shaping: Shaping | None = None
    relative_reward: bool = _opt(False, "pay the score minus the rivals' mean score (train-time only)")
    # -- PPO (sb3-contrib MaskablePPO)
    total_timesteps: int = _opt(1_000_000, "learner transitions (agent steps) in all", ">= 1")
    seed: int = _opt(0, "random seed of the run (deals, opponents, network init)", "from 0 to 2**32 - 1")
    n_steps: int = _opt(
        64, "steps per sub-env per rollout (a rollout is n_steps x the sub-envs transitions)", ">= 1"
    )
    batch_size: int = _opt(
        1024, "PPO minibatch size in transitions (PPO normalizes advantages per minibatch)", ">= 2"
    )
    n_epochs: int = _opt(4, "PPO passes over each rollout", ">= 1")
    learning_rate: float = _opt(3e-4, "Adam learning rate (the start value with lr_schedule linear)", "> 0")
    lr_schedule: Literal["constant", "linear"] = _opt(
        "constant", "'constant' or 'linear' (falls to 0 at total_timesteps)"
    )
    gamma: float = _opt(0.995, "discount factor", "in (0, 1]")
    gae_lambda: float = _opt(0.95, "GAE lambda", "in [0, 1]")
    clip_range: float = _opt(0.2, "PPO clipping of the policy ratio", "> 0")
    ent_coef: float = _opt(0.01, "entropy bonus coefficient", ">= 0")
    vf_coef: float = _opt(0.5, "value loss coefficient", ">= 0")
    max_grad_norm: float = _opt(0.5, "gradient norm clip", "> 0")
    net_arch: list[int] = field(
        default_factory=lambda: [256, 256],
        metadata=_meta("hidden layer widths of the policy and value nets, e.g. 256,256"),
    )
    activation: Literal["relu", "tanh"] = _opt("relu", "activation of the hidden layers: 'relu' or 'tanh'")
    policy: Literal["flat", "moves"] = _opt(
        "flat",
        "'flat': one output per action; 'moves': each legal move scored by one network from its features "
        "(nertz_env.move_features)",
    )
    move_arch: list[int] = field(
        default_factory=lambda: [128],
        metadata=_meta("policy moves: hidden layer widths of the network that scores a move, e.g. 128"),
    )
    # -- the run
    init_from: str | None = _opt(
        None, "start from this policy's weights (a policy.zip or checkpoint; not a resume); none: fresh"
    )
    run_dir: str = _opt("runs/nertz", "directory of the run's checkpoints, policy, logs and eval.csv")
    checkpoint_every: int = _opt(250_000, "timesteps between checkpoints (0: only the final one)", ">= 0")
    keep_checkpoints: int = _opt(0, "periodic checkpoints kept (0: all)", ">= 0")
    evaluation: Evaluation | None = field(default_factory=Evaluation)
    tensorboard: bool = _opt(True, "write TensorBoard logs under run_dir/tb")
    progress_bar: bool = _opt(True, "show a progress bar of the timesteps")
    torch_threads: int | None = _opt(None, "torch threads; none: the CPUs this process may use", ">= 1")
    verbose: int = _opt(0, "Stable-Baselines3 verbosity", "0, 1 or 2")

    # ------------------------------------------------------------------ building and checking
    @classmethod
    def from_dict(cls, data: Mapping[str, Any], base: TrainConfig | None = None) -> TrainConfig:
        """``base`` (default: the defaults) with the options of ``data`` (sections as tables, or the flags'
        top-level keys) replaced, checked."""
        flat = (base or cls()).flat()
        given: set[str] = set()
        for key, value in data.items():
            if key in SECTIONS and isinstance(value, Mapping):
                prefix = SECTIONS[key][1]
                names = [o.field for o in OPTIONS.values() if o.section == key]
                for k, v in value.items():
                    if k not in names:
                        raise ConfigError(f"[{key}] has no option {k!r}; it has: {', '.join(names)}")
                    flat[prefix + k] = _copy(v)
                    given.add(prefix + k)
                if key in MODES:
                    flat["mode"] = key
                elif key != "pool":
                    flat[key] = True
            elif key in flat:
                flat[key] = _copy(value)
                given.add(key)
            else:
                raise ConfigError(
                    f"unknown training option {key!r}; the options are: {', '.join(sorted(flat))}"
                )
        return cls._build(flat, given)

    def flat(self) -> dict[str, Any]:
        """Every option under its top-level key (the flag's name), sections' switches included: ``mode``,
        ``shaping`` and ``evaluation`` (true/false); an absent section's options at their defaults."""
        out = {}
        for name, o in OPTIONS.items():
            holder = self if o.section is None else getattr(self, o.section)
            out[name] = _copy(o.default if holder is None else getattr(holder, o.field))
        return {
            **out,
            "mode": self.mode,
            "shaping": self.shaping is not None,
            "evaluation": self.evaluation is not None,
        }

    @classmethod
    def _build(cls, flat: dict[str, Any], given: set[str]) -> TrainConfig:
        """Check the types; refuse an option that has no effect if this layer gave it, reset it if a lower one
        did (a flag turning a section off wins over the file's section)."""
        for name, o in options().items():
            _check_type(name, flat[name], o.type)
        mode, players, learners = flat["mode"], flat["num_players"], flat["learners_per_table"]
        if mode == "vector" and learners is not None and not 1 <= learners <= players:
            raise ConfigError(
                f"learners_per_table must be from 1 to num_players={players} or none, got {learners}"
            )
        present = {
            "vector": mode == "vector",
            "single": mode == "single",
            "pool": mode == "single" or (learners or players) < players,
            "shaping": flat["shaping"],
            "evaluation": flat["evaluation"] and flat["eval_deals"] > 0 and bool(flat["eval_opponents"]),
        }
        on = present | {
            "snapshot_weight": flat["snapshot_weight"] > 0,
            "checkpoint_every": flat["checkpoint_every"] > 0,
            "policy": flat["policy"] == "moves",
        }
        needs = {s: _keys(s) for s in SECTIONS} | {
            "snapshot_weight": ["snapshot_every", "max_snapshots", "snapshot_deterministic"],
            "checkpoint_every": ["keep_checkpoints"],
            "policy": ["move_arch"],
        }
        needs["pool"].append("opponent_threads")
        # deals and opponents turn evaluation off, and every = 0 means none during training: both are allowed
        allowed = {"eval_deals", "eval_opponents"} | ({"eval_every"} if flat["eval_every"] == 0 else set())
        needs["evaluation"] = [n for n in needs["evaluation"] if n not in allowed]
        for key, why in _INERT.items():
            for name in [] if on[key] else needs[key]:
                if name in given and flat[name] != OPTIONS[name].default:
                    raise ConfigError(f"{name} ({flag_of(name)}) {why}")
                flat[name] = _copy(OPTIONS[name].default)
        sections: dict[str, Any] = {
            s: kind(**{o.field: flat[n] for n, o in OPTIONS.items() if o.section == s})
            if present[s]
            else None
            for s, (kind, _) in SECTIONS.items()
        }
        cfg = cls(**{o.field: flat[n] for n, o in OPTIONS.items() if o.section is None}, **sections)
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
        if "num_players" in self.rules:
            raise ConfigError("give the table size as num_players, not in rules")
        try:
            make_config(num_players=self.num_players, **self.rules)
        except ValueError as e:
            raise ConfigError(f"rules: {e}") from None
        flat = self.flat()
        for name, o in OPTIONS.items():
            value = flat[name]
            if isinstance(value, float) and not math.isfinite(value):
                raise ConfigError(f"{name} must be a finite number, got {value!r}")
            if o.want is not None and value is not None and not RANGES[o.want](value):
                raise ConfigError(f"{name} must be {o.want}, got {value!r}")
        for name in ("net_arch", "move_arch"):
            if not flat[name] or any(h < 1 for h in flat[name]):
                raise ConfigError(f"{name} must list positive layer widths, got {flat[name]}")
        for spec, w in flat["opponents"].items():
            if not (math.isfinite(w) and w >= 0):
                raise ConfigError(
                    f"opponents: the weight of {spec!r} must be a finite number >= 0, got {w!r}"
                )
        if any(not s.strip() for s in [*flat["opponents"], *flat["eval_opponents"]]):
            raise ConfigError("opponents and eval_opponents take agent specs such as 'heuristic', got ''")
        twice = sorted({s for s in flat["eval_opponents"] if flat["eval_opponents"].count(s) > 1})
        if twice:
            raise ConfigError(f"eval_opponents names {', '.join(twice)} twice: each baseline is played once")
        if (
            self.pool is not None
            and self.pool.snapshot_weight == 0
            and sum(self.pool.opponents.values()) <= 0
        ):
            raise ConfigError(
                "the opponent pool is empty: give an opponent a weight > 0 (--opponent heuristic=1) "
                "or the snapshots one (--snapshot-weight 1)"
            )

    @property
    def learners(self) -> int:
        """Learning seats per table (1 in mode single)."""
        return 1 if self.vector is None else self.vector.learners_per_table or self.num_players

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
        rollouts_left = max(0, -((start - self.total_timesteps) // self.rollout_size))  # rounded up
        return start + rollouts_left * self.rollout_size

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
            # agents refuse a table in reset (a trained policy checks its rules, table size and spaces)
            make_agent(spec).reset(make_config(num_players=self.num_players, **self.rules), 0, 0)
        except (AgentSpecError, FileNotFoundError, ValueError) as e:
            raise ConfigError(f"{where}: {e}") from None


class Option(NamedTuple):
    """One option as a flag sees it."""

    section: str | None  # the section that holds it; None: a top-level option (or a section's switch)
    field: str  # its name there
    type: Any
    default: Any
    help: str
    want: str | None = None  # a key of RANGES


def _options() -> dict[str, Option]:
    """Every option under its top-level key, in the order of the dataclasses."""
    out = {}
    sections: list[tuple[str | None, tuple[type, str]]] = [(None, (TrainConfig, "")), *SECTIONS.items()]
    for section, (kind, prefix) in sections:
        types, default = get_type_hints(kind), kind()
        for f in dataclasses.fields(kind):
            if f.name not in SECTIONS:  # (the metadata: help and want)
                value = getattr(default, f.name)
                out[prefix + f.name] = Option(section, f.name, types[f.name], value, **f.metadata)
    return out


OPTIONS = _options()
#: the sections' switches: a section table in a file sets them too
SWITCHES = {
    "mode": Option(
        None,
        "mode",
        Mode,
        "vector",
        "'vector': NertzVecEnv over the batched engine; 'single': the single-agent view, one learning seat among "
        "the pool's opponents",
    ),
    "shaping": Option(
        None, "shaping", bool, False, "a potential-based reward for emptying the Nertz pile (train-time only)"
    ),
    "evaluation": Option(
        None, "evaluation", bool, True, "evaluate the policy during and after training (eval.csv)"
    ),
}


def _keys(section: str) -> list[str]:
    return [name for name, o in OPTIONS.items() if o.section == section]


#: the options only the SB3 backend reads (``--backend rllib`` has no flag for them and refuses them set)
SB3_ONLY = (
    *("mode", "shaping", "evaluation", *_keys("single"), *_keys("shaping"), *_keys("evaluation")),
    *("opponent_threads", "privileged_critic", "snapshot_deterministic", "relative_reward", "lr_schedule"),
    *("activation", "init_from", "keep_checkpoints", "progress_bar", "policy", "move_arch"),
)


def options() -> dict[str, Option]:
    """Every option as a flag sees it, the switches first."""
    return SWITCHES | OPTIONS


def flag_of(name: str) -> str:
    """``snapshot_every`` -> ``--snapshot-every``; a list's flag repeats: ``opponents`` -> ``--opponent``."""
    lists = {"opponents": "--opponent", "eval_opponents": "--eval-opponent", "rules": "--rule"}
    return lists.get(name, "--" + name.replace("_", "-"))


def _copy(v: Any) -> Any:
    """A copy of an option's value, tuples as lists (a Python caller's ``net_arch=(64, 64)`` is a list)."""
    if isinstance(v, dict):
        return {k: _copy(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_copy(x) for x in v]
    return v


#: what a value of each type is called in an error
_WORDS = {
    bool: "true or false",
    int: "an integer",
    float: "a number",
    str: "a string",
    list[int]: "a list of integers",
    list[str]: "a list of strings",
    dict[str, float]: "a table of agent spec = weight",
    dict[str, Any]: "a table (mapping)",
}


def _is(value: Any, kind: Any) -> bool:
    """Is ``value`` of the type ``kind`` (a field's type; a bool is no number, an int is a float)?"""
    origin, args = get_origin(kind), get_args(kind)
    if origin is Literal:
        return isinstance(value, str) and value in args
    if origin is list:
        return isinstance(value, list) and all(_is(x, args[0]) for x in value)
    if origin is dict:
        return isinstance(value, dict) and all(_is(k, args[0]) and _is(v, args[1]) for k, v in value.items())
    if kind is Any or isinstance(value, bool):
        return kind in (Any, bool)
    return isinstance(value, (int, float) if kind is float else kind)


def _check_type(name: str, value: Any, kind: Any) -> None:
    """Raise :class:`ConfigError` when ``value`` is not of the type ``kind``; ``X | None`` allows None."""
    if get_origin(kind) in (Union, UnionType):
        if value is None:
            return
        kind = next(a for a in get_args(kind) if a is not type(None))
    if value is None:
        raise ConfigError(f"{name} must not be empty (None)")
    if not _is(value, kind):
        words = f"one of {get_args(kind)}" if get_origin(kind) is Literal else _WORDS[kind]
        raise ConfigError(f"{name} must be {words}, got {value!r}")


def shipped_configs() -> dict[str, str]:
    """The configs shipped with the package (``train/configs/*.toml`` in the repository, package data of
    ``nertz_env.train`` when installed): name (file stem) -> path."""
    folder = glob.escape(os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs"))
    files = sorted(glob.glob(os.path.join(folder, "*.toml")))
    return {os.path.basename(f).removesuffix(".toml"): f for f in files}


def resolve_config_path(path: str) -> str:
    """``--config``'s file: a path that exists, else a shipped config by name (``long_run`` or
    ``long_run.toml``; ``train/configs/long_run.toml`` too, the repository path the docs show)."""
    if os.path.isfile(path):
        return path
    shipped = shipped_configs()
    name = os.path.basename(path).removesuffix(".toml")
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
    if ext not in (".toml", ".json"):
        raise ConfigError(f"config file {path}: use a .toml or .json file, got {ext or 'no extension'!r}")
    toml = "tomllib" if sys.version_info >= (3, 11) else "tomli"  # 3.10: tomli
    try:
        with open(path, "rb") as f:  # both parsers read bytes (JSON as UTF-8, or UTF-16/32 by its first bytes)
            data = (json if ext == ".json" else importlib.import_module(toml)).load(f)
    except (ValueError, OSError, RecursionError) as e:  # RecursionError: JSON nested thousands deep
        raise ConfigError(f"config file {path} could not be read: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a table of options")
    return data
