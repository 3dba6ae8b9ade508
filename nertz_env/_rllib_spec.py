"""The parts of :mod:`nertz_env.rllib` that need no Ray: the ``env_config`` check (:func:`parse_env_config`),
the :class:`League` and the names of modules and files. ``nertz-train --backend rllib`` checks its options with
them before Ray is imported (``--print-config`` makes the same checks as the run). Use them through
:mod:`nertz_env.rllib`, which re-exports them."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nertz_env.agents import make_agent
from nertz_env.config import OPTION_NAMES, NertzConfig, is_int, make_config

#: keys of ``env_config`` that are not rules options
ENV_KEYS = ("num_players", "num_tables", "learners_per_table", "opponents", "module_opponents", "seed")
LEARNER = "learner"
SNAPSHOT_PREFIX = "snapshot_"
LEARNER_MODULE_DIR = os.path.join("learner_group", "learner", "rl_module", LEARNER)


@dataclass(frozen=True)
class EnvSpec:
    """A validated ``env_config``: the table's rules and the env's own settings."""

    config: NertzConfig
    num_tables: int = 1
    learners_per_table: int | None = None
    opponents: dict[str, float] = field(default_factory=dict)
    module_opponents: float = 0.0
    seed: int | None = None

    @property
    def learners(self) -> int:
        """Learner seats per table (every seat when ``learners_per_table`` is unset)."""
        return self.learners_per_table or self.config.num_players


def parse_env_config(env_config: Mapping[str, Any] | None) -> EnvSpec:
    """Validate ``env_config`` (docs/guides/rllib.md); every problem is one ``ValueError`` with one line."""
    cfg = dict(env_config or {})
    unknown = sorted(set(cfg) - set(OPTION_NAMES) - set(ENV_KEYS))
    if unknown:
        raise ValueError(
            f"unknown env_config option(s) {unknown}; the options are the rules options "
            f"({', '.join(n for n in OPTION_NAMES if n != 'num_players')}) and {', '.join(ENV_KEYS)}"
        )
    env_keys = {k: cfg.pop(k) for k in ENV_KEYS if k in cfg and k != "num_players"}
    config = make_config(**cfg)  # rules and num_players; raises ValueError naming the option
    num_tables = env_keys.get("num_tables", 1)
    if not is_int(num_tables) or num_tables < 1:
        raise ValueError(f"num_tables must be a positive integer, got {num_tables!r}")
    learners = env_keys.get("learners_per_table")
    if learners is not None and (not is_int(learners) or not 1 <= learners <= config.num_players):
        raise ValueError(
            f"learners_per_table must be from 1 to num_players={config.num_players} or None, got {learners!r}"
        )
    opponents = env_keys.get("opponents") or {}
    if not isinstance(opponents, Mapping) or not all(
        isinstance(k, str) and isinstance(w, (int, float)) and not isinstance(w, bool) and w >= 0
        for k, w in opponents.items()
    ):
        raise ValueError(f"opponents must map agent specs to weights >= 0, got {opponents!r}")
    module_w = env_keys.get("module_opponents", 0.0)
    if isinstance(module_w, bool) or not isinstance(module_w, (int, float)) or module_w < 0:
        raise ValueError(f"module_opponents must be a weight >= 0, got {module_w!r}")
    seed = env_keys.get("seed")
    if seed is not None and (not is_int(seed) or seed < 0):
        raise ValueError(f"seed must be a non-negative integer or None, got {seed!r}")
    has_opponent_seats = learners is not None and learners < config.num_players
    if has_opponent_seats and sum(opponents.values()) + module_w <= 0:
        raise ValueError(
            f"learners_per_table={learners} leaves opponent seats: give opponents (agent spec -> weight) "
            "or module_opponents a weight > 0"
        )
    if not has_opponent_seats and (opponents or module_w):
        raise ValueError("opponents and module_opponents need learners_per_table below num_players")
    for spec in opponents:
        make_agent(spec)  # an unknown agent or bad parameter fails here, naming the spec
    return EnvSpec(config, int(num_tables), learners, dict(opponents), float(module_w), seed)


@dataclass
class League:
    """Opponents for the learner: ``learners_per_table`` learner seats per table, the rest drawn per deal
    from the scripted ``opponents`` (spec -> weight, playing inside the env) and ``snapshot_weight`` (the seat
    goes to one of ``max_snapshots`` frozen copies of the learner, chosen by the policy mapping)."""

    learners_per_table: int = 1
    opponents: dict[str, float] = field(default_factory=lambda: {"heuristic": 1.0})
    snapshot_weight: float = 1.0
    max_snapshots: int = 3
    snapshot_every: int = 10  # training iterations between snapshots (0: never refreshed)

    def env_keys(self) -> dict[str, Any]:
        """The league's keys of ``env_config`` (learner seats, opponents, module opponents)."""
        return {
            "learners_per_table": self.learners_per_table,
            "opponents": dict(self.opponents),
            "module_opponents": self.snapshot_weight if self.max_snapshots > 0 else 0.0,
        }

    @property
    def snapshot_ids(self) -> list[str]:
        """The module ids of the frozen snapshots of the learner."""
        return [f"{SNAPSHOT_PREFIX}{i}" for i in range(self.max_snapshots if self.snapshot_weight > 0 else 0)]
