"""The one place that limits how many compute threads a process uses.

torch, NumPy's BLAS and OpenMP each start a thread per core by default. With small nets one
thread per process is fastest, and N worker processes on N cores must not fight over them.
"""

from __future__ import annotations

import os
import sys

THREAD_ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def pin_threads(threads: int) -> None:
    """Limit this process (and the processes it starts) to `threads` compute threads.

    The variables are read when a library is first loaded, so they also cover torch if it is
    imported later; a torch already loaded is set directly. torch is not imported here, so
    processes that never need it start fast.
    """
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    for name in THREAD_ENV_VARS:
        os.environ[name] = str(threads)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)


def usable_cpus() -> int:
    """The cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)
