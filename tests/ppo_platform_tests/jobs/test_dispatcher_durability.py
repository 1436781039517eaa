"""The dispatcher's bookkeeping against a real job store when the store or the workers fail:
the in-memory state follows the durable one, lost jobs are retried a bounded number of times,
and a restarted service waits for a running job's lease before re-queueing it.

The executor here is a scripted one (results are handed to it by the test): what is under test
is the dispatcher and the store, not where the jobs run.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from ppo_platform.execution.base import QueuedExecutor, Task, TaskResult
from ppo_platform.jobs import Dispatcher, JobStore, ServiceSettings, prepare_submission
from ppo_platform.jobs.models import utcnow

SPEC = """name: tiny
env: {id: ppo_platform/GridWorld-v0, n_envs: 1}
rollout: {n_steps: 64}
update: {minibatch_size: 64}
budget: {total_timesteps: 512}
"""


class ScriptedExecutor(QueuedExecutor):
    """Records submitted tasks; the test decides how each ends (`end`)."""

    runs_here = False  # like Ray: a job's process cannot be seen from here

    def __init__(self) -> None:
        super().__init__()
        self.submitted: list[Task] = []

    def submit(self, task: Task) -> None:
        with self._lock:
            self._claim(task.key)
        self.submitted.append(task)

    def end(self, result: TaskResult) -> None:
        self._done.put(result)

    def cancel(self, key: str) -> bool:
        return False

    def shutdown(self, wait: bool = True, **options: Any) -> None:
        pass


class FlakyStore(JobStore):
    """A real store whose next `failures` writes raise the error a dropped connection does."""

    failures = 0

    def finish(self, *args: Any, **kwargs: Any) -> bool:
        if self.failures:
            self.failures -= 1
            raise OperationalError("UPDATE experiments", {}, Exception("connection lost"))
        return super().finish(*args, **kwargs)


@pytest.fixture
def flaky(tmp_path: Path) -> Any:
    store = FlakyStore(f"sqlite:///{tmp_path / 'jobs.db'}", tmp_path)
    yield store
    store.close()


def dispatcher(
    store: JobStore, tmp_path: Path, max_attempts: int | None = None, **service: Any
) -> Dispatcher:
    settings = ServiceSettings(jobs_concurrency=2, **service)
    executor = ScriptedExecutor()
    return Dispatcher(store, settings, tmp_path / "d.lock", executor, max_attempts=max_attempts)


def submit(store: JobStore) -> str:
    return store.submit("alice", prepare_submission(SPEC, 10**7), None, 100)[0].id


def started(d: Dispatcher, store: JobStore) -> str:
    job_id = submit(store)
    d.step()
    assert job_id in d.running and store.get(job_id).status == "running"
    return job_id


def test_a_transient_store_error_while_recording_an_end_is_retried(flaky, tmp_path) -> None:
    d = dispatcher(flaky, tmp_path)
    job_id = started(d, flaky)
    flaky.failures = 2  # two failed writes, then the store answers again
    d.executor.end(TaskResult(job_id, error="RuntimeError: boom"))  # type: ignore[attr-defined]
    d.step()
    assert flaky.get(job_id).status == "failed"
    assert job_id not in d.running and not d.unrecorded


def test_a_store_down_longer_keeps_the_job_running_in_memory_until_written(flaky, tmp_path) -> None:
    d = dispatcher(flaky, tmp_path)
    job_id = started(d, flaky)
    flaky.failures = 100
    d.executor.end(TaskResult(job_id, error="RuntimeError: boom"))  # type: ignore[attr-defined]
    with pytest.raises(OperationalError):
        d.step()
    # Not written: the dispatcher still counts it running and holds its result.
    assert job_id in d.running and [r.key for r in d.unrecorded] == [job_id]
    flaky.failures = 0
    d.step()
    job = flaky.get(job_id)
    assert job.status == "failed" and job.error == "RuntimeError: boom"
    assert job_id not in d.running and not d.unrecorded


def test_a_lost_job_is_requeued_until_its_attempts_run_out(store, tmp_path) -> None:
    d = dispatcher(store, tmp_path, max_attempts=2)
    job_id = started(d, store)
    lost = TaskResult(job_id, error="WorkerCrashedError: died", lost=True)
    d.executor.end(lost)  # type: ignore[attr-defined]
    d.step()  # recorded re-queued, and dispatched again (attempt 2)
    job = store.get(job_id)
    assert job.status == "running" and job.attempts == 2
    d.executor.end(lost)  # type: ignore[attr-defined]
    d.step()
    job = store.get(job_id)
    assert job.status == "failed" and job.attempts == 2
    assert job.error is not None
    assert "died on each of its 2 attempts" in job.error
    assert "PPO_PLATFORM_MAX_ATTEMPTS=2" in job.error
    assert len(d.executor.submitted) == 2  # type: ignore[attr-defined]


def test_recovery_on_a_cluster_waits_for_the_lease_of_a_running_job(store, tmp_path) -> None:
    fresh, stale = submit(store), submit(store)
    for job_id in (fresh, stale):
        assert store.mark_running(job_id)
    long_ago = utcnow() - dt.timedelta(seconds=120)
    store.update(stale, heartbeat_at=long_ago)
    d = dispatcher(store, tmp_path, lease_seconds=30)
    d.recover()
    # The fresh job's old task may still run: it keeps running; the stale one is re-queued.
    assert store.get(fresh).status == "running" and store.get(stale).status == "queued"
    assert d.leased == {fresh}
    store.update(fresh, heartbeat_at=long_ago)  # its process stopped renewing the lease
    d.step()  # re-queued, and dispatched again
    reasons = [e.data.get("reason", "") for e in store.events_after(fresh)]
    assert any(r.startswith("its process stopped renewing its lease") for r in reasons)
    assert not d.leased and store.get(fresh).attempts == 2


def test_a_job_process_renews_its_lease(store) -> None:
    from ppo_platform.jobs.reporting import Watcher

    job_id = submit(store)
    store.mark_running(job_id)
    store.update(job_id, heartbeat_at=None)
    with Watcher(store, job_id, interrupt=False):
        deadline = dt.datetime.now() + dt.timedelta(seconds=5)
        while store.get(job_id).heartbeat_at is None and dt.datetime.now() < deadline:
            pass
    assert store.get(job_id).heartbeat_at is not None


def test_a_job_that_stopped_because_its_node_died_is_requeued(store, tmp_path) -> None:
    """run_job answers "orphaned" when its parent (a Ray node's raylet) died under it."""
    d = dispatcher(store, tmp_path)
    job_id = started(d, store)
    d.executor.end(TaskResult(job_id, value="orphaned"))  # type: ignore[attr-defined]
    d.step()
    job = store.get(job_id)
    assert job.status == "running" and job.attempts == 2  # re-queued and dispatched again
    reasons = [e.data.get("reason", "") for e in store.events_after(job_id)]
    assert any("its worker died (its parent process died" in r for r in reasons), reasons
