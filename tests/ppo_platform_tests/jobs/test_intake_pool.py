"""Specs read in intake worker processes: results and typed errors come back; a worker that
dies is replaced."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ppo_platform.errors import LimitError, SpecError, UnavailableError
from ppo_platform.jobs import JobStore
from ppo_platform.jobs.intake import prepare_submission
from ppo_platform.jobs.intake_pool import IntakePool, guarded, submit_spec, validation_summary

GRID = (
    "name: g\nenv: {id: ppo_platform/GridWorld-v0, n_envs: 1}\n"
    "rollout: {n_steps: 64}\nbudget: {total_timesteps: 512}\n"
)


@pytest.mark.parametrize("workers", [1, 0])
def test_submissions_and_their_spec_errors_come_back_from_the_workers(workers: int) -> None:
    pool = IntakePool(workers)
    pool.start()
    try:
        job = pool.submit(prepare_submission, GRID, 10**6).result(timeout=60)
        assert (job.kind, job.name, job.total_timesteps) == ("run", "g", 512)
        assert validation_summary(GRID) == pool.submit(validation_summary, GRID).result(60)
        with pytest.raises(SpecError) as raised:
            pool.submit(prepare_submission, GRID.replace("GridWorld", "Nope"), 10**6).result(60)
        assert [issue.path for issue in raised.value.issues] == ["env.id"]
        assert raised.value.issues[0].value == "ppo_platform/Nope-v0"
    finally:
        pool.close()


def test_a_worker_that_dies_is_replaced_and_the_request_is_unavailable() -> None:
    pool = IntakePool(1)
    try:
        with pytest.raises(UnavailableError, match="send the request again"):
            pool.submit(os._exit, 3).result(timeout=60)
        job = pool.submit(prepare_submission, GRID, 10**6).result(timeout=60)
        assert job.name == "g"
    finally:
        pool.close()


def test_a_worker_holds_calls_which_outlive_a_death_in_the_first() -> None:
    pool = IntakePool(1)
    try:
        pool.submit(os.getpid).result(timeout=60)  # started and warm
        slow, then = pool.submit(time.sleep, 0.5), pool.submit(os.getpid)
        started = time.monotonic()
        assert slow.result(60) is None and then.result(60) > 0  # in order, one worker
        assert time.monotonic() - started < 30
        # Killed with a call held in its pipe: that one never started, so a fresh worker runs
        # it; only the call it died in is answered 503.
        first = then.result(60)
        dying = pool.submit(os._exit, 3)
        held = [pool.submit(os.getpid) for _ in range(3)]  # all three in its pipe
        with pytest.raises(UnavailableError, match="send the request again"):
            dying.result(timeout=60)
        pids = {call.result(timeout=60) for call in held}
        assert len(pids) == 1 and first not in pids  # run in order by the fresh worker
        assert pool.submit(prepare_submission, GRID, 10**6).result(timeout=60).name == "g"
    finally:
        pool.close()


def test_the_calls_held_in_a_pipe_stay_within_its_byte_budget() -> None:
    """Up to three calls wait in a busy worker's pipe, 64 KiB of them at most: a call past
    that waits in the pool, so writing it never blocks on a full pipe (in the event loop)."""
    from ppo_platform.jobs.intake_workers import PIPELINED_BYTES, WorkerProcesses

    pool = WorkerProcesses(1, guarded, "restarted")
    try:
        pool.call(os.getpid).result(timeout=60)  # started and warm
        busy = pool.call(time.sleep, 1.0)
        small = [pool.call(len, b"x") for _ in range(3)]
        assert len(pool._waiting) == 0  # three held in its pipe
        fourth = pool.call(len, b"x")
        assert len(pool._waiting) == 1  # four held: the next waits
        assert busy.result(60) is None and [f.result(60) for f in small] == [1, 1, 1]
        assert fourth.result(60) == 1
        busy = pool.call(time.sleep, 1.0)
        big = [pool.call(len, b"x" * (PIPELINED_BYTES // 2)) for _ in range(2)]
        assert len(pool._waiting) == 1  # the second would pass the byte budget
        assert [f.result(60) for f in big] == [PIPELINED_BYTES // 2] * 2
    finally:
        pool.close()


def test_an_idle_worker_that_dies_is_replaced_and_the_pool_answers_on() -> None:
    pool = IntakePool(1)
    try:
        idle = pool.submit(os.getpid).result(timeout=60)
        os.kill(idle, signal.SIGKILL)  # killed between two calls (the OOM killer, an admin)
        deadline = time.monotonic() + 60
        while Path(f"/proc/{idle}").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        again = pool.submit(os.getpid).result(timeout=60)
        assert again != idle
        assert pool.submit(prepare_submission, GRID, 10**6).result(timeout=60).name == "g"
    finally:
        pool.close()


def test_a_worker_queues_the_submission_in_the_store(store: JobStore) -> None:
    pool = IntakePool(1)
    try:
        row, created = pool.submit(submit_spec, store.url, "alice", GRID, "k1", 10**6, 5).result(60)
        again, created_again = pool.submit(
            submit_spec, store.url, "alice", GRID, "k1", 10**6, 5
        ).result(60)
        assert (created, created_again, again.id) == (True, False, row.id)
        assert (store.get(row.id, "alice").status, row.kind) == ("queued", "run")
        with pytest.raises(LimitError, match="max_queued"):
            for _ in range(5):
                pool.submit(submit_spec, store.url, "alice", GRID, None, 10**6, 5).result(60)
    finally:
        pool.close()


def test_workers_exit_when_the_api_process_is_killed() -> None:
    script = (
        "import os, signal; from ppo_platform.jobs.intake_pool import IntakePool; "
        "pool = IntakePool(1); print(pool.submit(os.getpid).result(60), flush=True); "
        "os.kill(os.getpid(), signal.SIGKILL)"
    )
    command = [sys.executable, "-c", script]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    worker = int(done.stdout.split()[0])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and Path(f"/proc/{worker}").exists():
        time.sleep(0.2)
    assert (
        not Path(f"/proc/{worker}").exists()
        or "\nState:\tZ" in Path(f"/proc/{worker}/status").read_text()
    )
