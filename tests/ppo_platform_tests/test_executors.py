"""The local process pool: real spawned workers, failures recorded, never propagated."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from ppo_platform.errors import SpecError, SpecIssue
from ppo_platform.execution.local import LocalExecutor, Task, run_tasks

# Job functions live at module level: spawned workers import them by name.


def meet(folder: str, expected: int, timeout: float = 120.0) -> tuple[int, bool]:
    """Check in under `folder`, then wait until `expected` jobs have checked in (or time out)."""
    Path(folder, f"{os.getpid()}-{time.monotonic_ns()}").touch()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(list(Path(folder).iterdir())) >= expected:
            return os.getpid(), True
        time.sleep(0.05)
    return os.getpid(), False


def square(x: int) -> int:
    return x * x


def explode(message: str) -> None:
    raise ValueError(message)


def refuse() -> None:
    # SpecError's constructor does not match its args: it would not unpickle in the parent.
    raise SpecError([SpecIssue("update.epochs", "refused: too many epochs.", 31)])


def die() -> None:
    os._exit(3)


def torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def test_jobs_run_at_the_same_time_in_separate_worker_processes(tmp_path):
    tasks = [Task(f"job{i}", meet, (str(tmp_path), 2)) for i in range(2)]
    results = run_tasks(tasks, workers=2)
    pids = {result.value[0] for result in results}
    # Each job waited for the other to check in: only possible if both ran at once.
    assert [result.value[1] for result in results] == [True, True]
    assert len(pids) == 2
    assert os.getpid() not in pids
    first, second = results
    assert first.started < second.ended and second.started < first.ended


def test_a_failing_job_is_recorded_and_the_others_still_finish():
    tasks = [Task("a", square, (3,)), Task("b", explode, ("boom",)), Task("c", square, (4,))]
    results = run_tasks(tasks, workers=2)
    assert [result.key for result in results] == ["a", "b", "c"]
    assert [result.value for result in results] == [9, None, 16]
    assert results[1].error == "ValueError: boom"
    assert "explode" in results[1].traceback
    assert [result.ok for result in results] == [True, False, True]


def test_an_exception_that_would_not_unpickle_comes_back_as_text():
    [result] = run_tasks([Task("spec", refuse)], workers=1)
    assert result.error.startswith("SpecError: ")
    assert "refused: too many epochs." in result.error


def test_a_worker_that_dies_is_recorded_as_a_failed_job():
    with LocalExecutor(workers=1) as executor:
        result = executor.submit("dies", die).result(timeout=120)
    assert not result.ok
    assert "BrokenProcessPool" in result.error


@pytest.mark.slow  # the worker imports torch
def test_workers_run_torch_with_the_configured_thread_count():
    [result] = run_tasks([Task("threads", torch_threads)], workers=1, torch_threads=1)
    assert result.value == 1


def test_run_tasks_refuses_duplicate_keys():
    with pytest.raises(ValueError, match="unique"):
        run_tasks([Task("same", square, (1,)), Task("same", square, (2,))], workers=1)
