"""Python-side entry points to the compiled rules over a batch: blocks of tables run on all cores.

The compiled block functions (:mod:`nertz_env.engine.rules`) release the GIL, so each core's thread steps its
own contiguous block of tables with the very same machine code as a single table; small batches stay on the
calling thread. (numba's ``parallel=True`` is slower here: inside a parfor the state arrays lose their
contiguous layout and a slower specialisation of the rules gets compiled. The measurements behind this
module's choices: ``experiments/design_measurements.md``.)
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from nertz_env.engine.rules import sample_block, step_block
from nertz_env.engine.state import C_P, DONE_TERMINATED, TableState

PARALLEL_MIN_TABLES = 256  # below this a thread hand-off costs more than the work it saves (bench/bench_vector.py)


def _default_workers() -> int:
    env = os.environ.get("NERTZ_NUM_THREADS")
    if env:
        return max(1, int(env))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


WORKERS = _default_workers()
_pool: ThreadPoolExecutor | None = None


def _blocks(n: int) -> list[tuple[int, int]]:
    if n < PARALLEL_MIN_TABLES or WORKERS == 1:
        return [(0, n)]
    k = min(WORKERS, n)
    edges = np.linspace(0, n, k + 1).astype(int)
    return [(int(edges[i]), int(edges[i + 1])) for i in range(k)]


def _run(fn: Callable[..., None], args: tuple, n: int) -> None:
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
    """``fn``'s compiled entry point for exactly the types of ``args`` (compiling it if needed).

    Calling a numba dispatcher works out the type of every argument first, which for the table state (a
    tuple of some 40 arrays) costs about as much as stepping one table. An object that always passes arrays
    of the same types (an environment over its own state) can call the entry point instead, which only
    unboxes them. Without numba's JIT (``NUMBA_DISABLE_JIT=1``) this returns ``fn`` itself.
    """
    overloads = getattr(fn, "overloads", None)
    if overloads is None:  # a plain Python function
        return fn
    types = tuple(fn.typeof_pyval(a) for a in args)  # type: ignore[attr-defined]
    if types not in overloads:
        fn.compile(types)  # type: ignore[attr-defined]
    return overloads[types].entry_point


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def seed_tables(state: TableState, seeds: np.ndarray) -> None:
    """Seed table t's generator from ``seeds[t]``: the engine's ``seed_table`` (the seed, mixed once by one
    splitmix64 step) on whole arrays (numpy's uint64 arithmetic wraps as the compiled code's does)."""
    z = np.asarray(seeds).astype(np.uint64) + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    state.rng[: len(z)] = z ^ (z >> np.uint64(31))


def _deal(state: TableState, n: int) -> None:
    """Deal every table a new episode from its generator's current state, through ``step_block``'s autoreset
    (the table marked ended, its actions ignored): the same compiled ``reset_table`` as ``reset_block``
    runs, without compiling a second entry point (on a cold cache the first reset and the first step
    compile one function instead of two; see bench/bench_compile.py)."""
    state.done[:n] = DONE_TERMINATED
    _run(step_block, (state, np.zeros((n, state.cfg[C_P]), np.int64), True), n)


def reset(state: TableState, seeds: np.ndarray) -> None:
    """Seed table t with ``seeds[t]`` (uint64) and deal each of those tables a new episode."""
    seed_tables(state, seeds)
    _deal(state, len(seeds))


def reset_continue(state: TableState) -> None:
    """Deal every table a new episode from its generator's current state."""
    _deal(state, state.tick.shape[0])


def step(
    state: TableState, actions: np.ndarray, autoreset: bool = False, fn: Callable[..., None] = step_block
) -> None:
    """One tick on every table; ``actions``: int64, shape (tables, players). ``fn``: ``step_block`` or its
    :func:`bound` entry point for these arrays."""
    _run(fn, (state, actions, autoreset), actions.shape[0])


def sample(
    mask: np.ndarray, rng: np.ndarray, out: np.ndarray, fn: Callable[..., None] = sample_block
) -> None:
    """Uniformly random legal actions into ``out`` (int64, (tables, players)), drawn from ``rng``.
    ``fn``: ``sample_block`` or its :func:`bound` entry point for these arrays."""
    _run(fn, (mask, rng, out), mask.shape[0])
