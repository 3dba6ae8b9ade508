"""The policy agent and ``.zip`` loader, moved to :mod:`nertz_env.agents.policy`; re-exported here for old
imports (and for training checkpoints that pickled ``nertz_env.train.policy_agent.PolicyAgent``)."""

from nertz_env.agents.policy import *  # noqa: F403
