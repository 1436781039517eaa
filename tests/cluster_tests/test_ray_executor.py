"""The Ray executor on a real two-node cluster: results, errors as data, cancel, a lost worker."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from ppo_platform.errors import BadInputError, UnavailableError
from ppo_platform.execution.base import Task, TaskResult
from ppo_platform.execution.choose import job_executor, pool_executor
from ppo_platform.execution.ray_executor import RayExecutor, connect
from ppo_platform.settings import Settings


def test_tasks_run_on_the_cluster_and_come_back_by_key(ray_address: str) -> None:
    with RayExecutor(ray_address) as executor:
        results = {
            r.key: r for r in executor.map_tasks(Task(f"p{i}", pow, (i, 2)) for i in range(4))
        }
    assert {key: r.value for key, r in results.items()} == {"p0": 0, "p1": 1, "p2": 4, "p3": 9}
    assert all(r.ok and r.pid and r.pid != os.getpid() for r in results.values())


def test_an_error_comes_back_as_data(ray_address: str) -> None:
    with RayExecutor(ray_address) as executor:
        [result] = list(executor.map_tasks([Task("bad", int, ("not a number",))]))
    assert not result.ok and not result.lost
    assert result.error is not None and result.error.startswith("ValueError: invalid literal")


def test_cancel_drops_a_queued_task_and_kill_stops_a_running_one(ray_address: str) -> None:
    with RayExecutor(ray_address) as executor:  # two one-CPU nodes: the third task waits
        for key in ("first", "second", "third"):
            executor.submit(Task(key, time.sleep, (120,)))
        time.sleep(3)
        assert executor.cancel("third")
        started = time.monotonic()
        assert executor.kill("first") and executor.kill("second")
        results = {r.key: r for r in executor.as_completed(timeout=60)}
    assert time.monotonic() - started < 30
    assert results["third"].cancelled
    assert all(not r.ok and not r.lost for r in results.values())


def test_cancel_interrupts_a_running_task(ray_address: str, tmp_path: Path) -> None:
    """Ray workers ignore SIGINT and ray.cancel does not stop a running task: the cancel flag
    raises KeyboardInterrupt in the task, which comes back as data, not lost, worker alive."""
    started = tmp_path / "started"  # the nodes run on this machine: they share its files
    command = ["sh", "-c", f"touch {started} && exec sleep 120"]
    with RayExecutor(ray_address) as executor:
        executor.submit(Task("long", subprocess.call, (command,)))
        deadline = time.monotonic() + 180
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert started.exists(), "the task never started"
        assert executor.cancel("long")
        [result] = list(executor.as_completed(timeout=60))  # the task alone sleeps 120 s
    assert result.error is not None and result.error.startswith("KeyboardInterrupt")
    assert not result.lost and result.pid is not None


@pytest.mark.parametrize("repeats", [1, 3])
def test_a_cancelled_parent_comes_back_only_after_its_member_closed(
    ray_address: str, tmp_path: Path, repeats: int
) -> None:
    """A sweep job on Ray (a parent task whose member is another Ray task), cancelled: the
    parent waits for the member to close its run, even when the cancel reaches the parent
    twice (the flag's SIGINT and Ray's own `ray.cancel`). Before, the second interrupt cut the
    wait short: the job came back `cancelled` with the member's run still RUNNING. Further
    repeats (a user pressing Ctrl-C again) are held too."""
    import ray_nested_tasks
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(ray_nested_tasks)  # the nodes cannot import tests/
    try:
        with RayExecutor(ray_address, fresh_process=True) as executor:
            args = (ray_address, str(tmp_path))
            executor.submit(Task("parent", ray_nested_tasks.parent_of_one_member, args))
            wait_for_file(tmp_path / "member-started")
            assert executor.cancel("parent")
            wait_for_file(tmp_path / "member-interrupted")  # the parent now waits for it
            parent = int((tmp_path / "parent-pid").read_text())
            for _ in range(repeats):
                os.kill(parent, signal.SIGINT)
                time.sleep(0.5)
            [result] = list(executor.as_completed(timeout=120))
    finally:
        cloudpickle.unregister_pickle_by_value(ray_nested_tasks)
    assert result.error is not None and result.error.startswith("KeyboardInterrupt")
    parent_ended, interrupts = (tmp_path / "parent-ended").read_text().split()
    assert int(interrupts) >= 1 + repeats  # every repeat arrived, and was held
    assert float((tmp_path / "member-closed").read_text()) <= float(parent_ended)


def wait_for_file(path: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert path.exists(), f"{path.name} did not appear in {timeout:.0f} s"


def test_a_dead_worker_process_is_lost_not_failed(ray_address: str) -> None:
    with RayExecutor(ray_address, fresh_process=True) as executor:
        [result] = list(executor.map_tasks([Task("abort", os.abort)]))
    assert result.lost and not result.ok
    assert result.error is not None and "WorkerCrashedError" in result.error


def test_a_lost_task_runs_again_as_told_up_to_max_attempts(ray_address: str) -> None:
    from ppo_platform.execution.local import run_tasks

    def again(task: Task, lost: TaskResult) -> Task:
        assert lost.lost
        return Task(task.key, pow, (2, 3)) if task.key == "recovers" else task

    tasks = [Task("recovers", os.abort), Task("always", os.abort)]
    results = run_tasks(tasks, executor=RayExecutor(ray_address), max_attempts=2, again=again)
    assert results[0].ok and results[0].value == 8  # its second run
    assert results[1].lost and not results[1].ok  # died twice: given up


class HeadLostOnce:
    """Ray as the executor sees it, except that the next `wait` fails as with a lost head."""

    def __init__(self, ray: object) -> None:
        self.ray, self.fail = ray, True

    def __getattr__(self, name: str) -> object:
        return getattr(self.ray, name)

    def wait(self, *args: object, **kwargs: object) -> object:
        if self.fail:
            self.fail = False
            raise ConnectionError("GCS at 127.0.0.1 is unreachable")
        return self.ray.wait(*args, **kwargs)  # type: ignore[attr-defined]


def test_a_failing_collector_reports_its_tasks_lost_and_starts_over(ray_address: str) -> None:
    with RayExecutor(ray_address) as executor:
        executor._ray = HeadLostOnce(executor._ray)
        executor.submit(Task("long", time.sleep, (120,)))
        [lost] = list(executor.as_completed(timeout=30))
        assert lost.lost and "GCS at 127.0.0.1 is unreachable" in (lost.error or "")
        assert executor.health() == "ConnectionError: GCS at 127.0.0.1 is unreachable"
        [again] = list(executor.map_tasks([Task("after", pow, (3, 2))]))  # it started over
        assert again.value == 9 and executor.health() is None


def test_settings_choose_the_executor(ray_address: str) -> None:
    local = Settings(executor="local")
    assert type(job_executor(local, 1)).__name__ == "IsolatedExecutor"
    assert type(pool_executor(local, 1)).__name__ == "LocalExecutor"
    on_ray = Settings(executor="ray", ray_address=ray_address, ray_num_cpus=0.5)
    assert isinstance(pool_executor(on_ray, 1), RayExecutor)


def test_the_ray_executor_without_an_address_is_bad_input() -> None:
    pytest.importorskip("ray")
    with pytest.raises(BadInputError, match="PPO_PLATFORM_RAY_ADDRESS"):
        RayExecutor(None)


def test_a_ray_address_that_does_not_answer_is_unavailable_at_once() -> None:
    pytest.importorskip("ray")
    started = time.monotonic()
    with pytest.raises(UnavailableError, match=r"PPO_PLATFORM_RAY_ADDRESS=127\.0\.0\.1:1 does not"):
        connect("127.0.0.1:1")
    assert time.monotonic() - started < 10


def test_a_job_store_that_does_not_answer_names_its_setting_without_the_password(
    tmp_path,
) -> None:
    pytest.importorskip("psycopg")
    from ppo_platform.jobs.store import JobStore

    with pytest.raises(UnavailableError) as raised:
        JobStore("postgresql+psycopg://ppo:secret@127.0.0.1:1/jobs", tmp_path)
    message = str(raised.value)
    assert "PPO_PLATFORM_JOBS_DATABASE_URL=postgresql+psycopg://ppo:***@127.0.0.1:1/jobs" in message
    assert "secret" not in message


def test_an_optuna_storage_that_does_not_answer_names_its_setting_without_the_password() -> None:
    pytest.importorskip("psycopg")
    from ppo_platform.tuning.study import open_storage

    with pytest.raises(UnavailableError) as raised:
        open_storage("postgresql+psycopg://ppo:secret@127.0.0.1:1/optuna")
    message = str(raised.value)
    assert "PPO_PLATFORM_OPTUNA_STORAGE_URL) postgresql+psycopg://ppo:***@127.0.0.1:1/optuna" in (
        message
    )
    assert "secret" not in message


def test_a_task_of_a_cuda_run_is_given_a_gpu_and_others_none(ray_address: str) -> None:
    import ray

    from ppo_platform.spec.machine import task_gpus

    if not connect(ray_address).cluster_resources().get("GPU"):
        pytest.fail("the test cluster declares no GPU (.ci/services.sh gives its second node one)")
    tasks = [
        Task("cuda", ray.get_gpu_ids, num_gpus=task_gpus("cuda")),
        Task("auto", ray.get_gpu_ids, num_gpus=task_gpus("auto")),
    ]
    with RayExecutor(ray_address) as executor:
        results = {r.key: r for r in executor.map_tasks(tasks)}
    assert results["cuda"].ok and len(results["cuda"].value) == 1
    assert results["auto"].ok and results["auto"].value == []
