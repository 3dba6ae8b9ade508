"""What every environment class shares: how it copies itself (one mechanism for ``pickle`` and
``copy.deepcopy``), the closed check, and the unknown-reset-option warning.

An environment holds two kinds of attribute. Most are plain data (the config, the engine's state arrays, the
generators' states, the opponents): pickle and deepcopy copy them as they are. A few are *derived* from that
data and cannot, or must not, be copied: the compiled entry points of the rules bound to the env's own arrays
(numba closures, which do not pickle), views of the state arrays (a copy of a view is a detached array, so a
copy that kept it would read buffers its engine never writes), and thread pools. A class lists those in
``_derived`` and rebuilds them from the data in ``_bind()``, which its ``__init__`` calls too, so a copy is
built by the same code as the original and cannot drift from it. A class with nothing derived (the per-agent
view, the single-agent view) needs no part of this: its parts (a vector env, a parallel env) copy themselves.

Because ``copy.deepcopy`` goes through ``__getstate__``/``__setstate__`` as pickle does, a deep copy and an
unpickled copy are the same thing: an independent table that continues exactly as the original (the rules'
random generators are part of the state arrays). A shallow ``copy.copy`` shares the state arrays, as it
shares every attribute.
"""

from __future__ import annotations

import warnings
from typing import Any, ClassVar


class Copyable:
    """Mixin: ``pickle``/``copy.deepcopy`` drop the attributes named in ``_derived`` and ``_bind()`` rebuilds
    them on the copy. Subclasses extend ``_derived`` (``_derived = Base._derived + ("_x",)``) and call
    ``super()._bind()`` when they override ``_bind``."""

    _derived: ClassVar[tuple[str, ...]] = ()

    def _bind(self) -> None:
        """(Re)build the derived attributes from the plain ones."""

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for name in self._derived:
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._bind()


def check_open(env: Any, method: str) -> None:
    """Raise ``gymnasium.error.ClosedEnvironmentError`` when ``env`` (an object with a ``_closed`` flag) has
    been closed: every environment class calls this in ``step`` and ``reset``."""
    if getattr(env, "_closed", False):
        from gymnasium.error import ClosedEnvironmentError

        raise ClosedEnvironmentError(
            f"{type(env).__name__}.{method}() after close(): a closed environment cannot be used; make a new one"
        )


def warn_unknown_options(options: dict[str, Any], known: tuple[str, ...]) -> None:
    """Warn (every call) about ``reset`` option keys outside ``known``; they are ignored. A warning rather than
    an error because PettingZoo's ``api_test``/``parallel_api_test`` pass ``options={"options": 1}`` to check
    that ``reset`` accepts options; every env of this package does the same."""
    unknown = sorted(map(str, set(options) - set(known)))
    if unknown:
        takes = "the options are " + ", ".join(repr(k) for k in known) if known else "it takes no options"
        warnings.warn(f"reset() ignores unknown option(s) {unknown}; {takes}", stacklevel=3)
