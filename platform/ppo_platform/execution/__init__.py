"""Where tasks run: the Executor interface and its local process pool (the default).

The names below load on first use: a process that needs only `execution.child` (the tracking
process, an evaluation worker) or `execution.signals` does not import the pool and
multiprocessing with them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ppo_platform.execution.base import Executor, Task, TaskResult
    from ppo_platform.execution.local import (
        LocalExecutor,
        default_workers,
        run_tasks,
        worker_count,
    )
    from ppo_platform.execution.threads import THREAD_ENV_VARS, pin_threads

_HOME = {
    "Executor": "base",
    "Task": "base",
    "TaskResult": "base",
    "LocalExecutor": "local",
    "default_workers": "local",
    "run_tasks": "local",
    "worker_count": "local",
    "THREAD_ENV_VARS": "threads",
    "pin_threads": "threads",
}

__all__ = [
    "THREAD_ENV_VARS",
    "Executor",
    "LocalExecutor",
    "Task",
    "TaskResult",
    "default_workers",
    "pin_threads",
    "run_tasks",
    "worker_count",
]


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
