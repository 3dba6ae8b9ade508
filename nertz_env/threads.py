"""One place that caps the threads of the numeric libraries in a process the project runs or starts (every one
calls :func:`limit_threads` first: one torch thread per core in each worker oversubscribes the cores,
``bench/bench_workers.py``), and counts the CPUs it may use.
"""

from __future__ import annotations

import os
import sys

_ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def usable_cpus() -> int:
    """The CPUs this process may run on: its affinity where the system reports one (Linux), else the machine's."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS and Windows have no sched_getaffinity
        return os.cpu_count() or 1


def limit_threads(n: int = 1) -> None:
    """Cap this process at ``n`` threads for torch and the BLAS/OpenMP libraries: the environment variables
    where the user has not set them (for libraries loaded later and child processes), and torch at once if it
    is imported."""
    if n < 1:
        raise ValueError(f"threads must be at least 1, got {n}")
    for var in _ENV_VARS:
        os.environ.setdefault(var, str(n))
    torch = sys.modules.get("torch")
    if torch is not None and torch.get_num_threads() != n:
        torch.set_num_threads(n)
