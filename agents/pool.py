"""The opponent pool: scripted baselines and frozen snapshots of the learner, sampled by weight. It holds no
generator: whoever seats an opponent draws from its own stream. See docs/guides/training-sb3.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from nertz_env.agents import Agent, make_agent
from nertz_env.agents.policy import load_policy_agent


@dataclass(frozen=True)
class PoolEntry:
    """One kind of opponent: ``kind`` is ``"scripted"`` (``spec`` is an agent spec) or ``"snapshot"``
    (``spec`` is a checkpoint path)."""

    name: str
    spec: str
    kind: str
    weight: float


class OpponentPool:
    """Scripted agents by spec -> weight (0 keeps one out of sampling) plus up to ``max_snapshots`` frozen
    policies (the oldest dropped first) sharing ``snapshot_weight`` equally; ``snapshot_deterministic``: they
    play their most probable action instead of sampling."""

    def __init__(
        self,
        scripted: Mapping[str, float] | None = None,
        snapshot_weight: float = 0.0,
        max_snapshots: int = 10,
        snapshot_deterministic: bool = False,
    ) -> None:
        scripted = dict(scripted if scripted is not None else {"heuristic": 1.0})
        for spec, w in scripted.items():
            if not isinstance(w, (int, float)) or w < 0 or not np.isfinite(w):
                raise ValueError(f"opponent weight for {spec!r} must be a finite number >= 0, got {w!r}")
            make_agent(spec)  # unknown names and bad parameters fail here, naming the spec
        if snapshot_weight < 0 or not np.isfinite(snapshot_weight):
            raise ValueError(f"snapshot_weight must be a finite number >= 0, got {snapshot_weight!r}")
        if max_snapshots < 0:
            raise ValueError(f"max_snapshots must be >= 0, got {max_snapshots}")
        if sum(scripted.values()) <= 0 and (snapshot_weight <= 0 or max_snapshots == 0):
            raise ValueError(
                "the opponent pool is empty: give a scripted agent or the snapshots a weight > 0"
            )
        self.scripted = [PoolEntry(spec, spec, "scripted", float(w)) for spec, w in scripted.items()]
        self.snapshot_weight = float(snapshot_weight)
        self.max_snapshots = int(max_snapshots)
        self.snapshot_deterministic = bool(snapshot_deterministic)
        self.snapshots: list[PoolEntry] = []

    # ------------------------------------------------------------------ contents
    @property
    def entries(self) -> list[PoolEntry]:
        """Every entry with its current sampling weight (snapshots: an equal share of snapshot_weight)."""
        share = self.snapshot_weight / len(self.snapshots) if self.snapshots else 0.0
        return self.scripted + [PoolEntry(s.name, s.spec, s.kind, share) for s in self.snapshots]

    def _weights(self) -> tuple[list[PoolEntry], np.ndarray]:
        entries = self.entries
        w = np.array([e.weight for e in entries], dtype=np.float64)
        if w.sum() <= 0:
            raise ValueError(
                "the opponent pool has no opponent to draw yet (only snapshots have weight, none added yet)"
            )
        return entries, w

    def probabilities(self) -> dict[str, float]:
        """Entry name -> probability of being drawn for a seat now."""
        entries, w = self._weights()
        return {e.name: float(x) for e, x in zip(entries, w / w.sum(), strict=True)}

    def add_snapshot(self, path: str, name: str | None = None) -> PoolEntry:
        """Add the checkpoint ``path`` as a frozen opponent (dropping the oldest past ``max_snapshots``)."""
        if self.max_snapshots == 0:
            raise ValueError("max_snapshots is 0: this pool keeps no snapshots")
        entry = PoolEntry(
            name or os.path.splitext(os.path.basename(path))[0], os.path.abspath(path), "snapshot", 0.0
        )
        self.snapshots.append(entry)
        del self.snapshots[: max(0, len(self.snapshots) - self.max_snapshots)]
        return entry

    # ------------------------------------------------------------------ drawing and seating
    def sample(self, rng: np.random.Generator) -> PoolEntry:
        """One entry drawn by weight from ``rng`` (the caller's stream)."""
        entries, w = self._weights()
        k = int(np.searchsorted(np.cumsum(w), rng.random() * w.sum(), side="right"))
        k = min(k, len(entries) - 1)
        while w[k] <= 0:  # edge of the cdf: step back to an entry that has weight
            k -= 1
        return entries[k]

    def new_agent(self, entry: PoolEntry) -> Agent:
        """A fresh agent for ``entry`` (snapshots share their loaded network)."""
        if entry.kind == "snapshot":
            return load_policy_agent(entry.spec, deterministic=self.snapshot_deterministic, name=entry.name)
        return make_agent(entry.spec)

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, Any]:
        """The pool's contents (scripted specs, snapshot files and weights) for a checkpoint."""
        return {
            "scripted": [asdict(e) for e in self.scripted],
            "snapshots": [asdict(e) for e in self.snapshots],
            "snapshot_weight": self.snapshot_weight,
            "max_snapshots": self.max_snapshots,
            "snapshot_deterministic": self.snapshot_deterministic,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore contents saved by :meth:`state_dict`; a snapshot file that is gone raises
        ``FileNotFoundError`` naming it."""
        snapshots = [PoolEntry(**e) for e in state["snapshots"]]
        for e in snapshots:
            if not os.path.isfile(e.spec):
                raise FileNotFoundError(f"opponent pool snapshot {e.name!r} is missing: {e.spec}")
        self.scripted = [PoolEntry(**e) for e in state["scripted"]]
        self.snapshots = snapshots
        self.snapshot_weight = float(state["snapshot_weight"])
        self.max_snapshots = int(state["max_snapshots"])
        self.snapshot_deterministic = bool(state["snapshot_deterministic"])

    def __repr__(self) -> str:
        parts = [f"{e.name}={e.weight:g}" for e in self.scripted]
        parts.append(f"snapshots[{len(self.snapshots)}/{self.max_snapshots}]={self.snapshot_weight:g}")
        return f"OpponentPool({', '.join(parts)})"
