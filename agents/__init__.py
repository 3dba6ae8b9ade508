"""Agents for nertz-env: the agent protocol, the scripted baseline ladder and the registry.

The ladder, weakest first (each rung beats the one below with 95% confidence; ``nertz-eval ladder``):

    random      uniform over the legal actions
    greedy      any lake play first, else random
    heuristic   the seeds' strategy as a priority list (Nertz top first, runs that free it, brisk flips)
    search      the heuristic improved by rollouts on the engine's rules (with a memory of the stock)

``make_agent("heuristic:wait_prob=0.2")`` builds one by spec; a checkpoint path (``runs/ppo.zip``) uses the
loader that the training code registers with ``register_loader``.
"""

from nertz_env.agents.base import Agent
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
    "GreedyAgent",
    "HeuristicAgent",
    "RandomAgent",
    "SearchAgent",
    "known_agents",
    "make_agent",
    "register_agent",
    "register_loader",
]
