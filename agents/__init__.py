"""Agents for nertz-env: the agent protocol, the scripted ladder (``random``, ``greedy``, ``heuristic``,
``search``), the planners holding a trained network (``expert``, ``best``) and the registry: ``make_agent``
builds one by spec (``"heuristic:wait_prob=0.2"``, a policy ``.zip``). See docs/guides/evaluation.md and
docs/guides/learned-agents.md.
"""

from nertz_env.agents.base import Agent
from nertz_env.agents.expert import BestAgent, ExpertAgent
from nertz_env.agents.registry import (
    LADDER,
    AgentSpecError,
    known_agents,
    make_agent,
    register_agent,
    register_loader,
)
from nertz_env.agents.scripted import GreedyAgent, HeuristicAgent, RandomAgent
from nertz_env.agents.search import SearchAgent

__all__ = [
    "LADDER",
    "Agent",
    "AgentSpecError",
    "BestAgent",
    "ExpertAgent",
    "GreedyAgent",
    "HeuristicAgent",
    "RandomAgent",
    "SearchAgent",
    "known_agents",
    "make_agent",
    "register_agent",
    "register_loader",
]
