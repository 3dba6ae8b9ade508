"""The agent protocol: an agent sees only its seat's observation and mask, and draws any randomness from
its own generator, seeded in ``reset``, so it never changes the deal.
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
