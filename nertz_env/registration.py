"""Gymnasium ids of nertz-env, registered when ``nertz_env`` is imported: the single-agent view and the per-agent
vector env (docs/env/api.md, "Gymnasium ids")."""

from __future__ import annotations

from typing import Any

import gymnasium

NAMESPACE = "nertz_env"
SINGLE_ID = f"{NAMESPACE}/Nertz-v0"
AGENTS_ID = f"{NAMESPACE}/NertzAgents-v0"


def make_agents_vec(num_envs: int, num_players: int = 4, **kwargs: Any) -> gymnasium.vector.VectorEnv:
    """The vector entry point of ``nertz_env/NertzAgents-v0``: ``num_envs // num_players`` tables of
    :func:`nertz_env.agent_vector_env`."""
    from nertz_env.agent_vector import agent_vector_env

    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1 or num_envs % num_players:
        raise ValueError(
            f"num_envs={num_envs!r}: {AGENTS_ID} has one sub-environment per seat, so num_envs must be a "
            f"positive multiple of num_players={num_players} (tables x players)"
        )
    return agent_vector_env(num_envs // num_players, num_players=num_players, **kwargs)


gymnasium.register(id=SINGLE_ID, entry_point="nertz_env.single:NertzSingleAgentEnv")
gymnasium.register(id=AGENTS_ID, entry_point=None, vector_entry_point=f"{__name__}:make_agents_vec")
