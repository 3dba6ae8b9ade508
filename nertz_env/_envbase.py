"""What every environment class shares: one way to copy itself (``pickle`` and ``copy.deepcopy``), the closed
check, and the unknown-reset-option warning.

Most attributes are plain data (the config, the engine's arrays, the generators) and copy as they are. A few are
derived from that data and must not be copied (compiled entry points bound to the env's arrays, views of those
arrays): a class lists them in ``_derived`` and rebuilds them in ``_bind()``, which its ``__init__`` calls too.
A deep copy and an unpickled copy are then the same: an independent table that continues exactly as the original.
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
    """Raise ``gymnasium.error.ClosedEnvironmentError`` when ``env`` has been closed."""
    if getattr(env, "_closed", False):
        from gymnasium.error import ClosedEnvironmentError

        raise ClosedEnvironmentError(
            f"{type(env).__name__}.{method}() after close(): a closed environment cannot be used; make a new one"
        )


def warn_unknown_options(options: dict[str, Any], known: tuple[str, ...]) -> None:
    """Warn about ``reset`` option keys outside ``known``, which are ignored (PettingZoo's ``api_test`` passes
    one to check that ``reset`` accepts options)."""
    unknown = sorted(map(str, set(options) - set(known)))
    if unknown:
        takes = "the options are " + ", ".join(repr(k) for k in known) if known else "it takes no options"
        warnings.warn(f"reset() ignores unknown option(s) {unknown}; {takes}", stacklevel=3)
