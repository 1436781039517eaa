"""One process per task: a task that dies fails alone, with the signal named."""

from __future__ import annotations

import os
import signal
import time

from ppo_platform.execution.base import Task
from ppo_platform.execution.isolated import IsolatedExecutor

# Task functions live at module level: spawned processes import them by name.


def square(x: int) -> int:
    return x * x


def explode(message: str) -> None:
    raise ValueError(message)


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def nap(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpgid(0)


def test_each_task_ends_alone_value_error_or_death() -> None:
    executor = IsolatedExecutor(workers=2)
    for task in (Task("ok", square, (7,)), Task("raise", explode, ("boom",)), Task("die", die)):
        executor.submit(task)
    results = {r.key: r for r in executor.as_completed(timeout=60)}
    executor.shutdown()
    assert results["ok"].value == 49 and results["ok"].ok
    assert results["raise"].error == "ValueError: boom"
    assert results["die"].error == "ProcessDied: the task's process was killed by SIGKILL"


def test_a_task_runs_in_its_own_process_group_and_waiting_tasks_can_be_cancelled() -> None:
    executor = IsolatedExecutor(workers=1)
    executor.submit(Task("first", nap, (0.5,)))
    executor.submit(Task("second", square, (2,)))
    assert executor.cancel("second")
    results = {r.key: r for r in executor.as_completed(timeout=60)}
    executor.shutdown()
    assert results["first"].value == results["first"].pid  # process group leader
    assert results["second"].cancelled and results["second"].value is None
