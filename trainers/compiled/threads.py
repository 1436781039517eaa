"""XLA's CPU client made with as many pool threads as the program's callers.

The client sizes its thread pool by the cores the thread that creates it may run on, and
XLA_FLAGS cannot change that; a program then runs on that pool. Unpinned on 2 cores, one seed's
run kept the second core 20-35% busy and trained slower (CartPole 100k: 1.89 s wall and 2.33 s
CPU, against 1.58 s and 1.58 s with a pool of one), while two groups of a batch need a pool of
two (with one, they took turns: 21.1 s against 10.9 s for 16 seeds). So the client is created
while the creating thread may run on `threads` cores only, and every thread that creation
started gets all the process's cores back (they keep the pool's size, not the pin).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import jax

_TASKS = Path("/proc/self/task")
_made: list[int] = []  # the pool size chosen, once


def _thread_ids() -> set[int]:
    return {int(name) for name in os.listdir(_TASKS)} if _TASKS.is_dir() else set()


def create_cpu_client(threads: int, allowed_to_choose: bool) -> None:
    """The CPU client with a pool of `threads` threads, if this process has not made it yet
    and `allowed_to_choose` (the user's XLA_FLAGS did not take over the threading)."""
    if _made:
        return
    _made.append(threads)
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if not allowed_to_choose or not _TASKS.is_dir() or len(cores) <= threads:
        jax.devices("cpu")  # sized by the cores themselves
        return
    before = _thread_ids()
    os.sched_setaffinity(0, set(cores[:threads]))
    try:
        jax.devices("cpu")
    finally:
        os.sched_setaffinity(0, set(cores))
        for thread in _thread_ids() - before:
            with contextlib.suppress(OSError):  # a thread that ended meanwhile
                os.sched_setaffinity(thread, set(cores))
