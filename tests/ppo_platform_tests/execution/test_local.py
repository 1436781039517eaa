"""The local process pool: real workers (forked by the fork server), failures recorded, never
propagated."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from ppo_platform.errors import SpecError, SpecIssue
from ppo_platform.execution.base import Executor, Task
from ppo_platform.execution.local import LocalExecutor, run_tasks

# Job functions live at module level: workers import them by name.


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


def wait_for(path: str, timeout: float = 120.0) -> str:
    """Block until `path` exists: the test decides when this job may finish."""
    deadline = time.monotonic() + timeout
    while not Path(path).exists():
        if time.monotonic() > deadline:
            raise TimeoutError(path)
        time.sleep(0.02)
    return path


def start_then_wait(started: str, release: str) -> str:
    Path(started).touch()
    return wait_for(release)


def close_badly_when_interrupted(started: str, release: str) -> str:
    """A task whose clean-up fails on an interrupt: the interrupt never reaches the pool."""
    Path(started).write_text(str(os.getpid()))
    try:
        return wait_for(release)
    except KeyboardInterrupt:
        raise RuntimeError("closing the run failed") from None


def touch(path: str) -> int:
    Path(path).touch()
    return os.getpid()


def pid() -> int:
    return os.getpid()


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
        executor.submit(Task("dies", die))
        [result] = executor.as_completed(timeout=120)
    assert not result.ok
    assert "BrokenProcessPool" in result.error


@pytest.mark.slow  # the worker imports torch
def test_workers_run_torch_with_the_configured_thread_count():
    [result] = run_tasks([Task("threads", torch_threads)], workers=1, torch_threads=1)
    assert result.value == 1


def test_run_tasks_refuses_duplicate_keys():
    with pytest.raises(ValueError, match="unique"):
        run_tasks([Task("same", square, (1,)), Task("same", square, (2,))], workers=1)


def test_the_local_pool_is_an_executor():
    assert issubclass(LocalExecutor, Executor)


def test_results_come_back_in_the_order_jobs_finish(tmp_path):
    release = str(tmp_path / "release")
    with LocalExecutor(workers=2) as executor:
        executor.submit(Task("slow", wait_for, (release,)))
        executor.submit(Task("fast", square, (5,)))
        results = executor.as_completed(timeout=120)
        first = next(results)
        Path(release).touch()  # "slow" can only finish after "fast" was collected
        second = next(results)
        assert list(results) == []
    assert (first.key, first.value) == ("fast", 25)
    assert (second.key, second.value) == ("slow", release)


def test_a_cancelled_pending_job_never_runs(tmp_path):
    release, ran = str(tmp_path / "release"), tmp_path / "ran"
    with LocalExecutor(workers=1) as executor:
        executor.submit(Task("busy", wait_for, (release,)))
        for i in range(3):  # the pool hands a few jobs to its worker early; these are queued
            executor.submit(Task(f"queued{i}", square, (i,)))
        executor.submit(Task("cancelled", touch, (str(ran),)))
        assert executor.cancel("cancelled") is True
        Path(release).touch()
        results = {result.key: result for result in executor.as_completed(timeout=120)}
    assert set(results) == {"busy", "queued0", "queued1", "queued2", "cancelled"}
    assert results["cancelled"].cancelled and not results["cancelled"].ok
    assert results["queued2"].value == 4
    assert not ran.exists()


def test_a_running_job_cannot_be_cancelled(tmp_path):
    started, release = str(tmp_path / "started"), str(tmp_path / "release")
    with LocalExecutor(workers=1) as executor:
        executor.submit(Task("running", start_then_wait, (started, release)))
        wait_for(started)
        cancelled = executor.cancel("running")
        Path(release).touch()
        [result] = executor.as_completed(timeout=120)
    assert cancelled is False
    assert result.ok and result.value == release


def test_cancel_of_an_unknown_key_is_false():
    with LocalExecutor(workers=1) as executor:
        assert executor.cancel("nothing") is False


def test_an_outstanding_key_cannot_be_submitted_twice(tmp_path):
    with LocalExecutor(workers=1) as executor:
        executor.submit(Task("same", square, (1,)))
        with pytest.raises(ValueError, match="already outstanding"):
            executor.submit(Task("same", square, (2,)))
        [result] = executor.as_completed(timeout=120)
        executor.submit(Task("same", square, (3,)))  # collected: the key is free again
        [again] = executor.as_completed(timeout=120)
    assert (result.value, again.value) == (1, 9)


def test_shutdown_cancelling_pending_jobs_returns_them_as_cancelled(tmp_path):
    release = str(tmp_path / "release")
    executor = LocalExecutor(workers=1)
    executor.submit(Task("busy", wait_for, (release,)))
    for i in range(4):
        executor.submit(Task(f"queued{i}", touch, (str(tmp_path / f"ran{i}"),)))
    executor.shutdown(wait=False, cancel_pending=True)
    with pytest.raises(RuntimeError):
        executor.submit(Task("late", square, (1,)))
    Path(release).touch()
    results = {result.key: result for result in executor.as_completed(timeout=120)}
    executor.shutdown()
    assert set(results) == {"busy", "queued0", "queued1", "queued2", "queued3"}
    assert results["busy"].ok
    assert results["queued3"].cancelled
    assert not (tmp_path / "ran3").exists()


def test_shutdown_with_grace_stops_a_job_that_does_not_finish(tmp_path):
    executor = LocalExecutor(workers=1)
    executor.submit(Task("stuck", wait_for, (str(tmp_path / "never"), 600.0)))
    begun = time.monotonic()
    executor.shutdown(cancel_pending=True, grace=0.5)
    [result] = executor.as_completed(timeout=60)
    assert time.monotonic() - begun < 60
    assert not result.ok and not result.cancelled


def test_collecting_with_a_timeout_raises_timeout_error(tmp_path):
    release = str(tmp_path / "release")
    with LocalExecutor(workers=1) as executor:
        executor.submit(Task("busy", wait_for, (release,)))
        with pytest.raises(TimeoutError):
            list(executor.as_completed(timeout=0.2))
        Path(release).touch()
        [result] = executor.as_completed(timeout=120)
    assert result.ok


def test_an_idle_worker_survives_ctrl_c():
    with LocalExecutor(workers=1) as executor:
        executor.submit(Task("first", pid))
        [first] = executor.as_completed(timeout=120)
        os.kill(first.value, signal.SIGINT)  # what Ctrl-C in a terminal sends every worker
        time.sleep(0.5)
        executor.submit(Task("second", pid))
        [second] = executor.as_completed(timeout=120)
    assert second.ok and second.value == first.value


def _started_worker(started: Path) -> int:
    wait_for(str(started))
    while not started.read_text():
        time.sleep(0.02)
    return int(started.read_text())


def test_a_worker_signalled_mid_task_starts_no_further_task_however_the_task_ended(tmp_path):
    started, release = tmp_path / "started", tmp_path / "release"
    with LocalExecutor(workers=1) as executor:
        executor.submit(Task("first", close_badly_when_interrupted, (str(started), str(release))))
        executor.submit(Task("second", pid))  # queued to the same worker process
        os.kill(_started_worker(started), signal.SIGTERM)
        results = {r.key: r for r in executor.as_completed(timeout=120)}
    assert results["first"].error == "RuntimeError: closing the run failed"
    assert results["second"].cancelled and results["second"].value is None


def test_workers_of_a_caller_started_with_ctrl_c_ignored_ignore_it_too(tmp_path):
    """As under `nohup cmd &`: Ctrl-C to the process group must not stop the tasks."""
    started, release = tmp_path / "started", tmp_path / "release"
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with LocalExecutor(workers=1) as executor:
            task = Task("only", close_badly_when_interrupted, (str(started), str(release)))
            executor.submit(task)
            worker = _started_worker(started)
            signal.signal(signal.SIGINT, previous)
            os.kill(worker, signal.SIGINT)
            time.sleep(0.5)
            release.touch()
            [result] = executor.as_completed(timeout=120)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert result.ok and result.value == str(release)


def what_a_worker_has(name: str) -> tuple[str | None, bool, int]:
    """The worker's view: an environment variable, whether torch came imported, its pid."""
    import sys

    return os.environ.get(name), "torch" in sys.modules, os.getpid()


def test_workers_see_the_callers_environment_as_it_is_when_the_pool_is_made(monkeypatch):
    """Workers are forked from one fork server per process, started with the environment of
    its time; each pool's workers still see the caller's environment of their own time."""
    tasks = [Task(f"t{i}", what_a_worker_has, ("PPO_TEST_POOL_VALUE",)) for i in range(2)]
    for value in ("first", "second"):  # the second pool reuses the running fork server
        monkeypatch.setenv("PPO_TEST_POOL_VALUE", value)
        results = run_tasks(tasks, executor=LocalExecutor(2))
        assert [r.error for r in results] == [None, None]
        assert {r.value[0] for r in results} == {value}
        assert all(r.value[2] != os.getpid() for r in results)


PRELOADED_POOL = """
import multiprocessing.forkserver, os, sys
from ppo_platform.execution.base import Task
from ppo_platform.execution.local import LocalExecutor, run_tasks
sys.path.insert(0, {tests!r})
from test_local import what_a_worker_has

pool = LocalExecutor(1, preload=("torch",))
results = run_tasks([Task("a", what_a_worker_has, ("HOME",))], executor=pool)
server = multiprocessing.forkserver._forkserver._forkserver_pid
print("torch in the caller:", "torch" in sys.modules)
print("torch in the worker before its task:", results[0].value[1])
print("fork server apart:", server not in (None, os.getpid()))
"""


def test_a_pools_workers_start_with_its_preload_imported_once_by_the_fork_server():
    """In a fresh process (its first pool starts the fork server): the caller never imports
    torch, and a worker has it imported before its first task runs."""
    import subprocess
    import sys

    code = PRELOADED_POOL.format(tests=str(Path(__file__).parent))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == [
        "torch in the caller: False",
        "torch in the worker before its task: True",
        "fork server apart: True",
    ]
