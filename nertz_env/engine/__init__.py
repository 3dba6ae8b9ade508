"""The Nertz rules engine: numpy arrays and numba-compiled rules, batch-first, no framework imports.

``state`` holds the array layout, ``rules`` the rules for one table, ``batch`` the drivers over many tables.
"""

from nertz_env.engine.state import TableState, allocate

__all__ = ["TableState", "allocate"]
