"""Every job runs under bounds enforced from outside its code, against a real server: a job
stuck in user-steered code that never lets its threads run (an env whose step holds the
interpreter) is cancelled within 5 s, ends `failed` past its wall-clock or CPU bound with the
reason, and ends within its lease when its server is killed."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ppo_platform.jobs.dispatcher import process_alive
from tests.api_tests.conftest import REPO_ROOT, Server, start_server, submit, wait_for

pytestmark = pytest.mark.slow

STUCK_MODULE = "ppo_test_stuck_envs"
STUCK_ENV = "StuckCounter-v0"
# The env's step holds the interpreter after `stuck_after` steps: Python's re backtracks
# (x|xx)+ over a long run of x's without ever releasing the GIL, so no other thread of the
# job's process runs (its watcher cannot see a cancel or renew anything). It first touches
# the marker file named by PPO_TEST_STUCK_MARKER, so the test knows it is stuck.
STUCK_SOURCE = """
import os
import pathlib
import re

import gymnasium
import numpy as np
from gymnasium import spaces


class StuckCounter(gymnasium.Env):
    def __init__(self, stuck_after=300, render_mode=None):
        self.stuck_after = stuck_after
        self.observation_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self.action_space = spaces.Discrete(3)
        self.steps = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, dtype=np.float32), {}

    def step(self, action):
        self.steps += 1
        if self.steps >= self.stuck_after:
            pathlib.Path(os.environ["PPO_TEST_STUCK_MARKER"]).touch()
            re.match(r"(x|xx)+y", "x" * 200)
        obs = np.array([action - 1.0, self.steps % 2], dtype=np.float32)
        return obs, float(action == 2), self.steps % 50 == 0, False, {}


gymnasium.register(id="StuckCounter-v0", entry_point=StuckCounter)
"""
SPEC = (
    f"name: stuck\nenv: {{id: {STUCK_ENV}, n_envs: 1}}\n"
    "rollout: {n_steps: 64}\nupdate: {epochs: 1, minibatch_size: 64}\n"
    "budget: {total_timesteps: 2048}\nevaluation: {every_timesteps: 0}\n"
)


@pytest.fixture
def stuck_server(tmp_path: Path) -> Iterator[Server]:
    servers: list[Server] = []

    def make(**settings: str) -> Server:
        envs = tmp_path / "envs"
        envs.mkdir(exist_ok=True)
        (envs / f"{STUCK_MODULE}.py").write_text(STUCK_SOURCE)
        path = os.pathsep.join([str(REPO_ROOT / "platform"), str(REPO_ROOT), str(envs)])
        server = start_server(
            tmp_path / f"server{len(servers)}",
            PYTHONPATH=path,
            PPO_PLATFORM_ENV_PACKAGES=STUCK_MODULE,
            PPO_TEST_STUCK_MARKER=str(tmp_path / "stuck"),
            **settings,
        )
        servers.append(server)
        return server

    yield make  # type: ignore[misc]
    for server in servers:
        server.kill(signal.SIGTERM)


def submit_stuck(server: Server, marker: Path) -> tuple[str, int]:
    """Submit the stuck env's run; wait until its step holds the interpreter. (id, pid)"""
    with server.client("alice") as alice:
        response = submit(alice, SPEC)
        assert response.status_code == 202, response.text
        job_id = response.json()["id"]
        deadline = time.monotonic() + 120
        while not marker.exists():
            job = alice.get(f"/v1/experiments/{job_id}").json()
            assert job["status"] in ("queued", "running"), job
            assert time.monotonic() < deadline, "the job never reached its stuck step"
            time.sleep(0.2)
    pid = job_pid(server, job_id)
    assert process_alive(pid)
    return job_id, pid


def submit_running(server: Server) -> tuple[str, int]:
    """Submit the stuck env's run; wait until its process runs. (id, pid)"""
    with server.client("alice") as alice:
        response = submit(alice, SPEC)
        assert response.status_code == 202, response.text
        job_id = response.json()["id"]
        wait_for(alice, job_id, lambda job: job["status"] != "queued", timeout=60)
    return job_id, job_pid(server, job_id)


def job_pid(server: Server, job_id: str) -> int:
    """The job's process id, from the job store (the API does not show it), once its process
    has written it."""
    from ppo_platform.jobs.store import JobStore

    store = JobStore(f"sqlite:///{server.home / 'jobs.db'}", server.home, migrate_schema=False)
    deadline = time.monotonic() + 60
    try:
        while not (pid := store.get(job_id).pid):
            assert time.monotonic() < deadline, "the job's process never started"
            time.sleep(0.1)
    finally:
        store.close()
    return pid


def gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not process_alive(pid):
            return True
        time.sleep(0.1)
    return False


def test_cancel_ends_a_job_stuck_in_user_code_within_5_seconds(stuck_server, tmp_path):
    server = stuck_server()
    job_id, pid = submit_stuck(server, tmp_path / "stuck")
    with server.client("alice") as alice:
        asked = time.monotonic()
        assert alice.post(f"/v1/experiments/{job_id}/cancel").status_code in (200, 202)
        job = wait_for(alice, job_id, timeout=5)
        ended = time.monotonic() - asked
    assert job["status"] == "cancelled", job
    assert ended <= 5.0, f"cancel took {ended:.1f} s"
    assert not process_alive(pid)


def test_a_job_past_its_wall_clock_bound_ends_failed_with_the_reason(stuck_server, tmp_path):
    server = stuck_server(PPO_PLATFORM_JOB_MAX_SECONDS="12")
    job_id, pid = submit_running(server)
    with server.client("alice") as alice:
        job = wait_for(alice, job_id, timeout=60)
    assert job["status"] == "failed", job
    assert "wall-clock bound of 12 s" in job["error"]
    assert gone_within(pid, 10)


def test_a_job_past_its_cpu_bound_ends_failed_with_the_reason(stuck_server, tmp_path):
    # CPU bound = 600 s x 0.02 = 12 s of CPU (start-up and the stuck step); the lease (60 s)
    # and the wall-clock bound (600 s) are far away.
    server = stuck_server(
        PPO_PLATFORM_JOB_MAX_SECONDS="600",
        PPO_PLATFORM_JOB_CPU_SECONDS_PER_WALL_SECOND="0.02",
        PPO_PLATFORM_LEASE_SECONDS="60",
    )
    job_id, pid = submit_running(server)
    with server.client("alice") as alice:
        job = wait_for(alice, job_id, timeout=90)
    assert job["status"] == "failed", job
    assert "CPU bound of 12 s" in job["error"]
    assert not process_alive(pid)


def test_an_orphaned_job_stuck_in_user_code_ends_within_its_lease(stuck_server, tmp_path):
    server = stuck_server(PPO_PLATFORM_LEASE_SECONDS="10")
    _, pid = submit_stuck(server, tmp_path / "stuck")
    server.kill(signal.SIGKILL)  # the service is gone; nothing outside the job stops it
    assert gone_within(pid, 10 + 5), "the orphaned job process outlived its lease"
