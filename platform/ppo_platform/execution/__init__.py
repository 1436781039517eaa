"""Where tasks run: the Executor interface and its local process pool (the default)."""

from ppo_platform.execution.base import Executor, Task, TaskResult
from ppo_platform.execution.local import LocalExecutor, default_workers, run_tasks, worker_count
from ppo_platform.execution.threads import THREAD_ENV_VARS, pin_threads

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
