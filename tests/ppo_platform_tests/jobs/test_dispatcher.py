"""The dispatcher with real job processes: success, crashes, cancel, restart recovery."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ppo_platform.jobs import Dispatcher, JobStore, ServiceSettings, prepare_submission
from ppo_platform.jobs.models import TERMINAL

pytestmark = pytest.mark.slow
TINY_RUN = """name: tiny
env: {id: ppo_platform/GridWorld-v0, n_envs: 1}
rollout: {n_steps: 64}
update: {epochs: 2, minibatch_size: 64}
budget: {total_timesteps: %d}
evaluation: {every_timesteps: 256, episodes: 2}
checkpoints: {every_timesteps: 128}
"""
CRASH_RUN = """name: crash-%s
env: {id: ppo_platform/CrashTest-v0, kwargs: {mode: %s}}
rollout: {n_steps: 64}
update: {minibatch_size: 64}
budget: {total_timesteps: 512}
"""


@pytest.fixture
def dispatcher(store: JobStore, platform_home: Path) -> Iterator[Dispatcher]:
    service = ServiceSettings(jobs_concurrency=3, cancel_grace_seconds=10)
    running = Dispatcher(store, service, platform_home / "dispatcher.lock")
    running.start()
    yield running
    running.stop()


def _submit(store: JobStore, text: str) -> str:
    return store.submit("alice", prepare_submission(text, 10**7), None, 100)[0].id


def _wait(store: JobStore, job_id: str, until: frozenset[str] = TERMINAL, timeout: float = 120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = store.get(job_id)
        if job.status in until:
            return job
        time.sleep(0.2)
    raise AssertionError(f"{job_id} still {store.get(job_id).status} after {timeout} s")


def test_crashing_jobs_fail_with_their_reason_while_another_succeeds(
    store: JobStore, dispatcher: Dispatcher
) -> None:
    good = _submit(store, TINY_RUN % 512)
    raised = _submit(store, CRASH_RUN % ("raise", "raise"))
    killed = _submit(store, CRASH_RUN % ("kill", "kill"))
    assert "CrashTest env crashed on purpose" in (_wait(store, raised).error or "")
    assert "killed by SIGKILL" in (_wait(store, killed).error or "")
    job = _wait(store, good)
    assert job.status == "succeeded", job.error
    assert job.result["timesteps"] == 512 and job.result["final_eval_mean"] is not None
    assert job.mlflow_run_id == job.result["run_id"]
    kinds = [e.kind for e in store.events_after(good)]
    assert kinds[:2] == ["status", "status"] and kinds[-1] == "status"
    assert "eval" in kinds and "progress" in kinds


def test_a_job_whose_loss_goes_non_finite_fails_with_the_reason(store: JobStore, dispatcher):
    # Adam moves every weight by about the learning rate: 1e30 overflows float32 in one update.
    diverging = TINY_RUN.replace("epochs: 2,", "epochs: 2, learning_rate: 1.0e+30,") % 1024
    job = _wait(store, _submit(store, diverging))
    assert job.status == "failed"
    assert job.error is not None and job.error.startswith("TrainingError: training diverged")
    assert re.search(r"non-finite values after update 1: .*train/loss=(nan|inf)", job.error)
    last = store.events_after(job.id)[-1]
    assert last.kind == "status" and last.data == {"status": "failed", "error": job.error}


def test_cancel_stops_a_running_job_within_seconds_and_keeps_a_checkpoint(
    store: JobStore, dispatcher: Dispatcher, platform_home: Path
) -> None:
    job_id = _submit(store, TINY_RUN % 500_000)
    deadline = time.monotonic() + 60
    while not any(e.kind == "progress" for e in store.events_after(job_id)):
        assert time.monotonic() < deadline, "no progress within 60 s"
        time.sleep(0.2)
    asked = time.monotonic()
    store.cancel(job_id, "alice")
    job = _wait(store, job_id, timeout=30)
    assert job.status == "cancelled"
    assert time.monotonic() - asked < 10
    assert list((platform_home / "runs" / job.mlflow_run_id / "checkpoints").glob("*.zip"))


def _niceness(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])


def test_job_processes_run_at_the_configured_niceness(store: JobStore, platform_home: Path) -> None:
    service = ServiceSettings(jobs_concurrency=1, job_nice=7)
    running = Dispatcher(store, service, platform_home / "dispatcher.lock")
    running.start()
    try:
        job_id = _submit(store, TINY_RUN % 100_000)
        deadline = time.monotonic() + 120
        while (job := store.get(job_id)).pid is None or job.progress.get("timesteps", 0) == 0:
            assert time.monotonic() < deadline and job.status not in TERMINAL, job.error
            time.sleep(0.2)
        # Never below this process's own niceness (raising priority needs root).
        assert job.pid is not None and _niceness(job.pid) == max(
            7, os.getpriority(os.PRIO_PROCESS, 0)
        )
        store.cancel(job_id)
        assert _wait(store, job_id).status == "cancelled"
    finally:
        running.stop()
