"""numba's on-disk cache for the rules and the agents' kernels, keyed on the engine's sources.

numba keys a cache entry on its function's own file, but a cached function also carries the code and constants
of other files: :func:`keyed_jit` stamps the cache index with a hash of :data:`SOURCES` too, so an edit to any
of them compiles afresh. docs/guides/install.md says where the cache lives and what the notice means.
"""

from __future__ import annotations

import hashlib
import logging
import warnings
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import numba
from numba.core import event
from numba.core.caching import FunctionCache, IndexDataCacheFile
from numba.core.dispatcher import Dispatcher

LOG = logging.getLogger("nertz_env")

#: the files of the package that compiled code reads (tests/test_engine.py checks that the rules import
#: nothing else); a cached function's own file is keyed by numba itself
SOURCES = (
    "_text.py",
    "actions.py",
    "cards.py",
    "config.py",
    "observation.py",
    "moves.py",
    "engine/__init__.py",
    "engine/_abi.py",
    "engine/_cache.py",
    "engine/rules.py",
    "engine/state.py",
)
PACKAGE = Path(__file__).resolve().parents[1]

NOTICE = "nertz_env: compiling the rules with numba for their first use; {}"


@cache
def sources_key() -> str:
    """SHA-256 over the names and contents of :data:`SOURCES`."""
    h = hashlib.sha256()
    for name in SOURCES:
        data = (PACKAGE / name).read_bytes()
        h.update(name.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    return h.hexdigest()


class SourcesKeyedCache(FunctionCache):
    """numba's function cache, its index stamped by :func:`sources_key` too (a stale index reads as empty)."""

    def __init__(self, py_func: Callable[..., Any]) -> None:
        super().__init__(py_func)
        stamp = (self._impl.locator.get_source_stamp(), sources_key())
        self._cache_file = IndexDataCacheFile(
            cache_path=self._cache_path, filename_base=self._impl.filename_base, source_stamp=stamp
        )


_cached: set[Callable[..., Any]] = set()  # the functions keyed_jit made with cache=True
_warned = False


class _Notice(event.Listener):
    """Logs one line per process when numba compiles (not loads) a cached function."""

    told = False

    def on_start(self, ev: Any) -> None:
        if not self.told and getattr((ev.data or {}).get("dispatcher"), "py_func", None) in _cached:
            self.told = True
            kept = "later processes load them from numba's cache"
            if _warned:
                kept = "no cache can be kept here, so every process compiles"
            LOG.warning(NOTICE.format(kept))

    def on_end(self, ev: Any) -> None:
        pass


event.register("numba:compile", _Notice())


class CompileCacheWarning(UserWarning):
    """numba's on-disk cache cannot be used, so every process compiles the rules (given once per process)."""


def keyed_jit(options: dict[str, Any], cache: bool = True) -> Callable[[Callable[..., Any]], Any]:
    """``numba.njit(**options)``, and with ``cache`` a :class:`SourcesKeyedCache`. Without a writable cache
    folder it compiles in memory, with one :class:`CompileCacheWarning` per process."""

    def decorate(fn: Callable[..., Any]) -> Any:
        global _warned
        dispatcher = numba.njit(**options)(fn)
        if cache and isinstance(dispatcher, Dispatcher):
            _cached.add(fn)
            try:
                dispatcher._cache = SourcesKeyedCache(fn)  # type: ignore[attr-defined]
            except RuntimeError as e:  # numba: "cannot cache function ...: no locator available for file ..."
                if not _warned:
                    _warned = True
                    warnings.warn(
                        "nertz_env: no writable folder for numba's compile cache, so the rules compile in memory "
                        f"in every process ({e}). To keep the compiled rules, set NUMBA_CACHE_DIR to a writable "
                        "folder (e.g. export NUMBA_CACHE_DIR=/tmp/numba-cache).",
                        CompileCacheWarning,
                        stacklevel=2,
                    )
        return dispatcher

    return decorate
