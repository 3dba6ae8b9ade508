"""The checkpoint record, moved to :mod:`nertz_env.agents.meta`; this module re-exports it for old imports."""

from nertz_env.agents.meta import *  # noqa: F403
