"""Agents by spec: ``make_agent("heuristic:wait_prob=0.2")``, a checkpoint path, or a shipped model
name (``"ppo"``); and loaders for trained checkpoints by suffix (:func:`register_loader`). Errors are one line
meant for people. See docs/guides/evaluation.md.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable
from typing import Any

from nertz_env.agents.base import Agent, AgentSpecError, as_bool
from nertz_env.agents.expert import BestAgent, ExpertAgent
from nertz_env.agents.policy import load_policy_agent, shipped_models
from nertz_env.agents.policy import record_rules as record_rules  # the docs import both from here
from nertz_env.agents.rllib_policy import META_FILE, load_rllib_agent
from nertz_env.agents.scripted import GreedyAgent, HeuristicAgent, RandomAgent
from nertz_env.agents.search import SearchAgent
from nertz_env.config import NertzConfig

#: the baseline ladder, weakest first
LADDER = ("random", "greedy", "heuristic", "search")

_FACTORIES: dict[str, Any] = {
    "random": RandomAgent,
    "greedy": GreedyAgent,
    "heuristic": HeuristicAgent,
    "search": SearchAgent,
    "expert": ExpertAgent,
    "best": BestAgent,
}

_LOADERS: dict[str, Callable[..., Agent]] = {".zip": load_policy_agent}


def register_loader(suffix: str, loader: Callable[..., Agent]) -> None:
    """Make ``make_agent`` load files ending in ``suffix`` (e.g. ``".zip"``) with ``loader(path, **params)``."""
    if not suffix.startswith("."):
        raise ValueError(f"a checkpoint suffix starts with a dot, got {suffix!r}")
    _LOADERS[suffix.lower()] = loader


def register_agent(name: str, factory: Callable[..., Agent], params: dict[str, type] | None = None) -> None:
    """Add a named agent; ``factory(**params)`` builds it. ``params`` maps accepted parameters to types."""
    if not name or ":" in name or "=" in name:
        raise ValueError(f"an agent name must be non-empty without ':' or '=', got {name!r}")
    if params is not None:
        factory.PARAMS = params  # type: ignore[attr-defined]
    _FACTORIES[name] = factory


def known_agents() -> list[str]:
    """Names ``make_agent`` accepts (checkpoint paths aside): scripted agents and shipped models."""
    return sorted(set(_FACTORIES) | set(shipped_models()))


def _parse_value(text: str, kind: type, key: str, name: str) -> Any:
    try:
        if kind is bool:
            return as_bool(text, key)
        return kind(text)
    except ValueError:
        raise AgentSpecError(
            f"agent {name!r}: parameter {key}={text!r} is not a valid {kind.__name__}"
        ) from None


def _split_params(rest: str, name: str) -> dict[str, str]:
    params: dict[str, str] = {}
    for part in filter(None, rest.split(",")):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise AgentSpecError(
                f"agent {name!r}: parameters are key=value pairs separated by commas, got {part!r}"
            )
        if key.strip() in params:
            raise AgentSpecError(f"agent {name!r}: parameter {key.strip()!r} is given twice: give it once")
        params[key.strip()] = value.strip()
    return params


def run_folder_policy(path: str) -> str | None:
    """The policy to play from a ``nertz-train`` run folder: its ``policy.zip`` (the RLlib backend's ``final``),
    else its newest checkpoint (a run stopped early); ``None`` when ``path`` is no run folder."""
    for name in ("policy.zip", "final"):
        if os.path.exists(os.path.join(path, name)):
            return os.path.join(path, name)
    found = sorted(glob.glob(os.path.join(path, "checkpoints", "step_*")))
    zips = [p for p in found if p.endswith(".zip")] or [p for p in found if os.path.isdir(p)]
    return zips[-1] if zips else None


def make_agent(spec: str) -> Agent:
    """Build an agent from a spec (docs/guides/evaluation.md). Raises AgentSpecError for an unknown name, an
    unknown parameter or bad value, or no loader for a checkpoint's suffix; FileNotFoundError for a checkpoint
    path that does not exist."""
    if not isinstance(spec, str) or not spec.strip():
        raise AgentSpecError(f"an agent spec is a non-empty string such as 'heuristic', got {spec!r}")
    spec = spec.strip()
    head, _, rest = spec.partition(":")
    if head in _FACTORIES:
        factory = _FACTORIES[head]
        accepted: dict[str, type] = getattr(factory, "PARAMS", {})
        raw = _split_params(rest, head)
        unknown = sorted(set(raw) - set(accepted))
        if unknown:
            takes = ", ".join(f"{k} ({t.__name__})" for k, t in accepted.items()) or "no parameters"
            raise AgentSpecError(f"agent {head!r} has no parameter {', '.join(unknown)}; it takes {takes}")
        kwargs = {k: _parse_value(v, accepted[k], k, head) for k, v in raw.items()}
        try:
            agent = factory(**kwargs)
        except ValueError as e:
            raise AgentSpecError(f"agent {spec!r}: {e}") from None
        if rest:
            agent.name = spec
        return agent
    shipped = shipped_models().get(head)
    if shipped is not None:  # a shipped model is a .zip named by its name
        return _LOADERS[".zip"](shipped, **{"name": head, **_split_params(rest, head)})
    if os.path.isdir(head):  # an RLlib checkpoint is a directory (nertz_env.agents.rllib_policy)
        if not os.path.isfile(os.path.join(head, META_FILE)):  # no record: perhaps a run folder
            policy = run_folder_policy(head)
            if policy is not None:
                raise AgentSpecError(
                    f"{head} is a nertz-train run folder, not an agent: play its policy with {policy}"
                )
            if os.path.isdir(os.path.join(head, "checkpoints")):
                raise AgentSpecError(
                    f"{head} is a nertz-train run folder with no policy.zip and nothing in checkpoints/ yet: "
                    "nothing to play until its first checkpoint"
                )

        return load_rllib_agent(head, **_split_params(rest, head))
    if os.sep in head or "/" in head or "." in os.path.basename(head):  # a path, not a name
        if not os.path.exists(head):
            raise FileNotFoundError(f"checkpoint file not found: {head}")
        loader = next((f for suffix, f in _LOADERS.items() if head.lower().endswith(suffix)), None)
        if loader is None:
            suffixes = ", ".join(sorted(_LOADERS)) or "none registered"
            raise AgentSpecError(
                f"no loader for checkpoint {head!r} (loaders for: {suffixes}); "
                "call nertz_env.agents.register_loader(suffix, fn)"
            )
        return loader(head, **_split_params(rest, head))
    raise AgentSpecError(
        f"unknown agent {head!r}; known agents: {', '.join(known_agents())} "
        f"(or a checkpoint path such as runs/model.zip)"
    )


class IncompatibleAgentError(ValueError):
    """An agent that cannot play at a table (e.g. a policy trained for other rules); :func:`nertz_env.cli.advice`
    says what to change on the command line."""

    def __init__(
        self, spec: str, reason: str, trained: NertzConfig | None = None, table: NertzConfig | None = None
    ) -> None:
        super().__init__(f"agent {spec!r} cannot play at this table: {reason}")
        self.spec = spec
        self.trained = trained  # the table the agent was trained for, when it says
        self.table = table  # the table it was asked to play at


def check_agent(agent: Agent, spec: str, config: NertzConfig) -> None:
    """Raise :class:`IncompatibleAgentError` unless ``agent`` accepts a table of ``config``: agents refuse
    a table in ``reset`` (a trained policy checks the rules, table size and spaces it was trained for), so
    this resets it once at seat 0, in the calling process, before any deal is played."""
    try:
        agent.reset(config, 0, 0)
    except ValueError as e:
        raise IncompatibleAgentError(spec, str(e), getattr(agent, "trained_config", None), config) from None
