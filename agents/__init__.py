"""Agents for nertz-env: the agent protocol, the scripted baseline ladder and the registry.

The ladder, weakest first (each rung beats the one below with 95% confidence; ``nertz-eval ladder``):

    random      uniform over the legal actions
    greedy      any lake play first, else random
    heuristic   the seeds' strategy as a priority list (Nertz top first, runs that free it, brisk flips)
    search      the heuristic improved by rollouts on the engine's rules (with a memory of the stock)

Above the ladder, ``expert`` is search with a trained network as its default move (:mod:`nertz_env.agents.expert`),
and ``best`` is that planner holding the shipped ``ppo`` network (expert iteration did not improve on it here;
``experiments/best/screening.md``).

``make_agent("heuristic:wait_prob=0.2")`` builds one by spec; a MaskablePPO checkpoint path (``runs/ppo.zip``)
loads as a policy agent (:mod:`nertz_env.agents.policy`, which imports torch and Stable-Baselines3 only then),
and ``register_loader`` adds loaders for other checkpoint files.
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
