"""numba's on-disk cache, keyed on every source file the compiled code comes from.

numba's own cache (``cache=True``) keys a function's entry on its own file's modification time and size (and
its bytecode). A cached entry point carries the machine code of every function it calls and every constant it
reads, including ones imported from other files (``nertz_env.engine.state``'s slots, ``nertz_env.actions``'s
layout, ``nertz_env.cards``' codes): after an edit there, numba would load and run the old code.

:func:`keyed_jit` gives a function a cache whose index is stamped with a SHA-256 of the sources of its module
and of every module of the same package that it imports, directly or through others (found by reading their
``import`` statements). Any edit to any of them makes the index stale, so numba compiles afresh and then
overwrites the entry; nothing else changes (same cache files and locations as ``cache=True``).
"""

from __future__ import annotations

import ast
import hashlib
import logging
import os
import sys
import threading
import warnings
from collections.abc import Callable
from typing import Any

import numba
from numba.core import event
from numba.core.caching import FunctionCache, IndexDataCacheFile
from numba.core.dispatcher import Dispatcher

_keys: dict[str, str] = {}

LOG = logging.getLogger("nertz_env")

# What compiles on first use, by module, and how long it takes on a cold cache (bench/bench_compile.py,
# cold first step of parallel_env(num_players=4) and the first search decision, on this project's 2-core
# machine): said once per process when the compile starts, so a first call is never a silent wait.
FIRST_COMPILE = {
    "nertz_env.engine.rules": ("the rules", "about 13 s on a quiet 2-core machine, up to 30 s on a busy one"),
    "nertz_env.agents.kernels": ("the search agents' kernels", "about 10 s"),
}


def _source_of(module: str) -> str | None:
    """The ``.py`` file of ``module`` (None when it is not a module with a source file), found along its
    top-level package's ``__path__`` without importing anything."""
    parts = module.split(".")
    top = sys.modules.get(parts[0])
    dirs = list(getattr(top, "__path__", None) or [])
    if not dirs:
        return None
    if len(parts) == 1:
        init = getattr(top, "__file__", None)
        return init if init and init.endswith(".py") else None
    for name in parts[1:-1]:
        dirs = [os.path.join(d, name) for d in dirs if os.path.isfile(os.path.join(d, name, "__init__.py"))]
    for d in dirs:
        for path in (os.path.join(d, parts[-1] + ".py"), os.path.join(d, parts[-1], "__init__.py")):
            if os.path.isfile(path):
                return path
    return None


def _imported(tree: ast.AST, module: str, is_package: bool) -> list[str]:
    """Names of the modules (and of the candidate submodules ``from pkg import name``) imported in ``tree``."""
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package, one level up per extra dot
                parts = module.split(".")
                parts = parts if is_package else parts[:-1]
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parts + ([base] if base else []))
            if base:
                names.append(base)
            names += [f"{base}.{alias.name}" if base else alias.name for alias in node.names]
    return names


def source_files(module: str) -> list[str]:
    """The source files of ``module`` and of every module of its top-level package it imports, transitively."""
    top = module.split(".")[0]
    found: dict[str, str] = {}
    todo = [module]
    seen = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = _source_of(name)
        if path is None:
            continue
        found[name] = path
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), path)
        is_package = path.endswith("__init__.py")
        todo += [n for n in _imported(tree, name, is_package) if n.split(".")[0] == top and n not in seen]
    return [found[n] for n in sorted(found)]


def sources_key(module: str) -> str:
    """SHA-256 over the names and contents of :func:`source_files` (computed once per module and process)."""
    key = _keys.get(module)
    if key is None:
        h = hashlib.sha256()
        top = module.split(".")[0]
        for path in source_files(module):
            parts = path.replace("\\", "/").split("/")
            rel = "/".join(parts[parts.index(top) :]) if top in parts else parts[-1]
            with open(path, "rb") as f:
                data = f.read()
            h.update(rel.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
        key = _keys[module] = h.hexdigest()
    return key


class SourcesKeyedCache(FunctionCache):
    """numba's function cache, with the index stamped by :func:`sources_key` as well as by the file's own
    modification time and size: a stale index reads as empty, so the function is compiled again."""

    def __init__(self, py_func: Callable[..., Any]) -> None:
        super().__init__(py_func)
        stamp = (self._impl.locator.get_source_stamp(), sources_key(py_func.__module__))
        self._cache_file = IndexDataCacheFile(
            cache_path=self._cache_path, filename_base=self._impl.filename_base, source_stamp=stamp
        )


#: seconds a compile of a :data:`FIRST_COMPILE` module runs before the notice is logged: the small compiles (a
#: helper or a block sampler a later process meets for the first time, well under a second) say nothing
ANNOUNCE_AFTER = 1.0


class _CompileNotice(event.Listener):
    """Logs once per process and module of :data:`FIRST_COMPILE`, when numba has been compiling (not loading
    from the cache) a function of that module for :data:`ANNOUNCE_AFTER` seconds: what compiles and how long
    the first time takes."""

    def __init__(self) -> None:
        self.told: set[str] = set()
        self._pending: dict[str, tuple[Any, threading.Timer]] = {}  # module -> (dispatcher, timer)
        self._lock = threading.Lock()

    def _tell(self, module: str) -> None:
        with self._lock:
            if module in self.told:
                return
            self.told.add(module)
            self._pending.pop(module, None)
        what, how_long = FIRST_COMPILE[module]
        # whether the cache works in this process, not whether this function has one: an uncached helper of
        # the module (inlined into the cached entry points) can be the first to compile, when another module's
        # kernels call it
        kept = "no cache can be kept here, so every process compiles" if _warned else (
            "later processes load them from numba's cache")
        LOG.warning(f"nertz_env: compiling {what} with numba for their first use ({how_long}); {kept}")

    def on_start(self, ev: Any) -> None:
        disp = (ev.data or {}).get("dispatcher")
        module = getattr(getattr(disp, "py_func", None), "__module__", "")
        if module not in FIRST_COMPILE or module in self.told or module in self._pending:
            return
        if ANNOUNCE_AFTER <= 0:
            self._tell(module)
            return
        timer = threading.Timer(ANNOUNCE_AFTER, self._tell, args=(module,))
        timer.daemon = True
        self._pending[module] = (disp, timer)
        try:
            timer.start()
        except RuntimeError:  # no thread to be had (a tight pids limit, the interpreter shutting down): say it now
            self._pending.pop(module, None)
            self._tell(module)

    def on_end(self, ev: Any) -> None:
        disp = (ev.data or {}).get("dispatcher")
        module = getattr(getattr(disp, "py_func", None), "__module__", "")
        with self._lock:
            pending = self._pending.get(module)
            if pending is not None and pending[0] is disp:  # the compile that started the clock has ended
                del self._pending[module]
                pending[1].cancel()


_notice = _CompileNotice()
event.register("numba:compile", _notice)


class CompileCacheWarning(UserWarning):
    """numba's on-disk cache cannot be used, so every process compiles the rules (given once per process)."""


_warned = False


def _warn_once(message: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(message, CompileCacheWarning, stacklevel=3)


def keyed_jit(options: dict[str, Any], cache: bool = True) -> Callable[[Callable[..., Any]], Any]:
    """``numba.njit(**options)``, and with ``cache`` a :class:`SourcesKeyedCache` (instead of ``cache=True``).

    Where no cache can be kept (numba finds no writable folder: not ``NUMBA_CACHE_DIR``, not the package's
    ``__pycache__``, not the user's cache folder, as in a read-only install without a writable home), the
    function compiles in memory, in every process, and one :class:`CompileCacheWarning` per process says how
    to keep the cache. Under ``NUMBA_DISABLE_JIT=1`` numba returns the plain function, which then runs as
    Python."""

    def decorate(fn: Callable[..., Any]) -> Any:
        dispatcher = numba.njit(**options)(fn)
        if cache and isinstance(dispatcher, Dispatcher):
            try:
                dispatcher._cache = SourcesKeyedCache(fn)  # type: ignore[attr-defined]
            except RuntimeError as e:  # numba: "cannot cache function ...: no locator available for file ..."
                _warn_once(
                    "nertz_env: no writable folder for numba's compile cache, so the rules compile in memory in "
                    f"every process ({e}). To keep the compiled rules, set NUMBA_CACHE_DIR to a writable folder "
                    "(e.g. export NUMBA_CACHE_DIR=/tmp/numba-cache)."
                )
            except (AttributeError, TypeError) as e:  # numba's cache internals changed: compile every time
                _warn_once(f"nertz_env: numba's on-disk cache is off ({e!r}); every process compiles")
        return dispatcher

    return decorate
