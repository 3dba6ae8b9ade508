"""The agent protocol: every agent (scripted, trained or human) sees only what its seat sees.

An agent is told the table's config and its seat at the start of each episode, then maps one observation
vector and its int8 legal-action mask to an action index. It never reads the engine's hidden state; it may
use :func:`nertz_env.decode` to read the observation. Any randomness comes from the agent's own generator,
seeded in ``reset``, so an agent never changes the deal.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from nertz_env.config import NertzConfig


@runtime_checkable
class Agent(Protocol):
    """What the evaluation harness and the opponent pool call."""

    name: str

    def reset(self, config: NertzConfig, seat: int, seed: int | None = None) -> None:
        """Start an episode at ``seat`` of a table with ``config``; ``seed`` seeds the agent's own generator."""
        ...

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        """An action index with ``action_mask[index] == 1``."""
        ...
