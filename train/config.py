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

Unknown keys and values of the wrong kind raise :class:`ConfigError` naming the key.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nertz_env.config import make_config

MODES = ("vector", "single")
ACTIVATIONS = ("relu", "tanh")
LR_SCHEDULES = ("constant", "linear")


class ConfigError(ValueError):
    """A bad training config (unknown key, wrong type, value out of range, unreadable file)."""


@dataclass
class TrainConfig:
    """Everything a training run needs. Field comments give the meaning; defaults suit a 2-core CPU."""

    # -- the table
    num_players: int = 4  # seats, 2 to 8
    rules: dict[str, Any] = field(default_factory=dict)  # rules options of NertzConfig (not num_players)
    # -- the environment
    mode: str = "vector"  # "vector": NertzVecEnv over the batched engine; "single": single-agent view
    num_tables: int = 64  # vector mode: tables stepped together
    learners_per_table: int | None = None  # vector mode: learning seats per table (None: all, self-play)
    opponent_threads: int = 1  # vector mode: threads the scripted opponents decide in (2 on 2 cores)
    num_envs: int = 4  # single mode: single-agent envs in a DummyVecEnv
    # -- opponents (single mode, and vector mode with learners_per_table < num_players)
    opponents: dict[str, float] = field(default_factory=lambda: {"heuristic": 1.0})  # agent spec -> weight
    snapshot_weight: float = 0.0  # total weight of the frozen snapshots of the learner
    snapshot_every: int = 0  # rollouts between snapshots (0: none)
    max_snapshots: int = 10  # snapshots kept in the pool (oldest dropped)
    snapshot_deterministic: bool = False  # snapshots play their argmax instead of sampling
    # -- reward shaping, train-time only (see nertz_env.train.wrappers)
    shaping: bool = False
    shaping_scale: float = 1.0
    shaping_gamma: float = 1.0  # 1 keeps the shaped return a constant away from the score
    shaping_coef: float | None = None  # potential per Nertz card (None: the rules' nertz_penalty)
    relative_reward: bool = False  # pay the score minus the rivals' mean score (train-time only)
    # -- PPO (sb3-contrib MaskablePPO)
    total_timesteps: int = 1_000_000  # learner transitions (agent steps) in all
    seed: int = 0
    n_steps: int = 64  # steps per sub-env per rollout (a rollout is n_steps * n_envs transitions)
    batch_size: int = 1024
    n_epochs: int = 4
    learning_rate: float = 3e-4
    lr_schedule: str = "constant"  # "constant" or "linear" (to 0 at total_timesteps)
    gamma: float = 0.995
    gae_lambda: float = 0.95
    clip_range: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    net_arch: list[int] = field(default_factory=lambda: [256, 256])  # hidden layers of policy and value nets
    activation: str = "relu"  # "relu" or "tanh"
    # -- the run
    init_from: str | None = (
        None  # start from this policy's weights (a policy.zip or checkpoint; not a resume)
    )
    run_dir: str = "runs/nertz"
    checkpoint_every: int = 250_000  # timesteps between checkpoints (0: only the final one)
    keep_checkpoints: int = 0  # periodic checkpoints kept (0: all)
    eval_every: int = 250_000  # timesteps between evaluations (0: only after training)
    eval_deals: int = 50  # duplicate deals per baseline (each played from every seat)
    eval_opponents: list[str] = field(default_factory=lambda: ["random", "heuristic"])
    eval_seed: int = 20_240_601
    eval_deterministic: bool = True  # the evaluated policy plays its argmax
    eval_workers: int = 1
    tensorboard: bool = True
    progress_bar: bool = True
    torch_threads: int = 1  # torch.set_num_threads; 1 is fastest on a shared 2-core machine
    verbose: int = 0

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
            "batch_size",
            "n_epochs",
            "torch_threads",
            "opponent_threads",
        )
        for name in positive:
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
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
        if self.learners_per_table is not None and not 1 <= self.learners_per_table <= self.num_players:
            raise ConfigError(
                f"learners_per_table must be from 1 to num_players={self.num_players} or None, "
                f"got {self.learners_per_table}"
            )
        if not self.net_arch or any(h < 1 for h in self.net_arch):
            raise ConfigError(f"net_arch must list positive layer widths, got {self.net_arch}")
        if any(w < 0 for w in self.opponents.values()) or self.snapshot_weight < 0:
            raise ConfigError("opponent weights and snapshot_weight must be >= 0")
        if self.eval_workers < 1:
            raise ConfigError(f"eval_workers must be >= 1, got {self.eval_workers}")
        if self.opponent_threads > 1 and self.mode != "vector":
            raise ConfigError(
                f"opponent_threads applies to mode = 'vector' (got {self.opponent_threads} with mode = {self.mode!r})"
            )

    @property
    def n_envs(self) -> int:
        """Sub-envs of the VecEnv (transitions per step)."""
        if self.mode == "single":
            return self.num_envs
        return self.num_tables * (self.learners_per_table or self.num_players)

    @property
    def uses_opponents(self) -> bool:
        return self.mode == "single" or (self.learners_per_table or self.num_players) < self.num_players


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


def read_config_file(path: str) -> dict[str, Any]:
    """The options in a ``.toml`` or ``.json`` file (not yet validated; see :meth:`TrainConfig.from_dict`)."""
    if not os.path.isfile(path):
        raise ConfigError(f"config file not found: {path}")
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
