"""The agent protocol: an agent sees only its seat's observation and mask, and draws any randomness from
its own generator, seeded in ``reset``, so it never changes the deal.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

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


class AgentSpecError(ValueError):
    """A spec that names no known agent, or parameters the agent does not take."""


def as_bool(value: Any, name: str) -> bool:
    """A spec parameter as a bool: a bool as it is, or ``1/true/yes/on`` and ``0/false/no/off`` in any case;
    anything else is a ValueError naming the parameter."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{name} must be true or false, got {value!r}")


def policy_params(what: str, params: dict[str, Any]) -> tuple[bool, Any]:
    """The ``deterministic`` (default true) and ``name`` parameters of a trained policy's spec; ``what`` names
    the checkpoint in the one-line errors (:class:`AgentSpecError`)."""
    unknown = sorted(set(params) - {"deterministic", "name"})
    if unknown:
        raise AgentSpecError(f"{what} has no parameter {', '.join(unknown)}; it takes deterministic (bool), name (str)")
    try:
        return as_bool(params.get("deterministic", True), "deterministic"), params.get("name")
    except ValueError as e:
        raise AgentSpecError(f"{what}: {e}") from None
