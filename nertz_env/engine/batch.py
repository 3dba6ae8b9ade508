"""Python-side entry points to the compiled rules over a batch: blocks of tables run on all cores.

The compiled block functions (:mod:`nertz_env.engine.rules`) release the GIL, so each core's thread steps its
own block of tables with the same machine code as a single table; small batches stay on the calling thread.
Why not numba's ``parallel=True``: docs/experiments/design-measurements.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from nertz_env.engine.rules import _GOLDEN, _MIX1, _MIX2, step_block
from nertz_env.engine.state import C_P, DONE_TERMINATED, TableState
from nertz_env.threads import usable_cpus

PARALLEL_MIN_TABLES = 256  # below this a thread hand-off costs more than it saves (bench/bench_vector.py)

WORKERS = max(1, int(os.environ.get("NERTZ_NUM_THREADS") or usable_cpus()))  # threads stepping a large batch
_pool: ThreadPoolExecutor | None = None


def _blocks(n: int) -> list[tuple[int, int]]:
    if n < PARALLEL_MIN_TABLES or WORKERS == 1:
        return [(0, n)]
    k = min(WORKERS, n)
    edges = np.linspace(0, n, k + 1).astype(int)
    return [(int(edges[i]), int(edges[i + 1])) for i in range(k)]


def run(fn: Callable[..., None], args: tuple, n: int) -> None:
    """Run ``fn(*args, lo, hi)`` over blocks covering tables 0..n-1, one block per core."""
    global _pool
    blocks = _blocks(n)
    if len(blocks) == 1:
        fn(*args, 0, n)
        return
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=WORKERS - 1, thread_name_prefix="nertz-engine")
    futures = [_pool.submit(fn, *args, lo, hi) for lo, hi in blocks[1:]]
    fn(*args, *blocks[0])
    for f in futures:
        f.result()


def bound(fn: Callable[..., None], *args: object) -> Callable[..., None]:
    """``fn``'s compiled entry point for exactly the types of ``args`` (compiling it if needed), which skips
    the dispatcher's typing of every argument on each call. Without numba's JIT it returns ``fn`` itself."""
    overloads = getattr(fn, "overloads", None)
    if overloads is None:  # a plain Python function
        return fn
    types = tuple(fn.typeof_pyval(a) for a in args)  # type: ignore[attr-defined]
    if types not in overloads:
        fn.compile(types)  # type: ignore[attr-defined]
    return overloads[types].entry_point


def seed(state: TableState, seeds: np.ndarray, tables: np.ndarray | slice = slice(None)) -> None:
    """Seed each of ``tables`` (default all): table t's generator starts at ``seeds[t]`` mixed once by
    splitmix64 (as ``rules.rng_next`` mixes), so nearby seeds differ."""
    z = np.asarray(seeds).astype(np.uint64)[tables] + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    state.rng[tables] = z ^ (z >> np.uint64(31))


def reset(state: TableState, seeds: np.ndarray | None) -> None:
    """Deal every table a new episode: with ``seeds``, table t's generator starts at ``seeds[t]``; without,
    each continues from its current state. The deal is ``step_block``'s autoreset (no second entry point)."""
    if seeds is not None:
        seed(state, seeds)
    n = state.tick.shape[0]
    state.done[:] = DONE_TERMINATED
    run(step_block, (state, np.zeros((n, state.cfg[C_P]), np.int64), True), n)
