"""The Nertz rules engine: numpy arrays and numba-compiled rules, batch-first, no framework imports.

``state`` holds the array layout, ``rules`` the rules for one table, ``batch`` the drivers over many tables.
"""

# numba's dispatcher remembers, once per process, how it types a TableState: the packed type (``_abi``) must be
# registered before any compiled function (the rules', or a user's own @njit) first sees a state
from nertz_env.engine import _abi  # noqa: F401  (a TableState crosses calls as one struct value)
from nertz_env.engine.state import TableState, allocate

__all__ = ["TableState", "allocate"]
