"""One place that caps the threads of the numeric libraries in a process the project runs or starts.

On a machine with few cores, torch's intra-op pool (one thread per core by default) in every worker process
oversubscribes the cores: a tournament with ``--workers 2`` and a trained policy then runs several times
slower than with ``--workers 1`` (``bench/bench_workers.py``). Every process the project starts (tournament workers, training, imitation) calls
:func:`limit_threads` before it does numeric work.
"""

from __future__ import annotations

import os
import sys

_ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def limit_threads(n: int = 1) -> None:
    """Cap this process at ``n`` threads for torch and the BLAS/OpenMP libraries.

    The environment variables are set only where the user has not set them (they take effect in libraries
    loaded later and in child processes); torch, when it is already imported, is capped at once. Call it
    again after importing torch if torch was not imported yet.
    """
    if n < 1:
        raise ValueError(f"threads must be at least 1, got {n}")
    for var in _ENV_VARS:
        os.environ.setdefault(var, str(n))
    torch = sys.modules.get("torch")
    if torch is not None and torch.get_num_threads() != n:
        torch.set_num_threads(n)
