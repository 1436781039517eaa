"""The API submitting to the Ray executor end to end, and a Ray worker killed mid-job: the job
is re-queued and resumes from its last checkpoint into the same MLflow run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cluster_services import Cluster
from postgres_server import free_port

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[2]
KEY = "key-ray-0123456789"
HEADERS = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/yaml"}


def spec(steps: int, every: int) -> str:
    return (
        "name: ray-job\nenv: {id: ppo_platform/GridWorld-v0, n_envs: 1}\n"
        "rollout: {n_steps: 64}\nupdate: {epochs: 2, minibatch_size: 64}\n"
        f"budget: {{total_timesteps: {steps}}}\n"
        "evaluation: {every_timesteps: 0, episodes: 2}\n"
        f"checkpoints: {{every_timesteps: {every}}}\n"
    )


@pytest.fixture
def api(cluster: Cluster, tmp_path: Path) -> Iterator[httpx.Client]:
    env = {
        **os.environ,
        **cluster.env(),
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "platform"), str(REPO_ROOT)]),
        "PPO_PLATFORM_API_KEYS": json.dumps({"ray": KEY}),
        "PPO_PLATFORM_JOBS_CONCURRENCY": "2",
        # A cancelled job is killed only after five minutes: cancels below must stop it by
        # themselves (a forced kill would leave its sweep members' runs RUNNING), however
        # slowly a loaded machine lets them close their runs.
        "PPO_PLATFORM_CANCEL_GRACE_SECONDS": "300",
    }
    port = free_port()
    log = (tmp_path / "server.log").open("wb")
    command = [sys.executable, "-m", "ppo_platform.cli", "serve", "--port", str(port)]
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=HEADERS, timeout=30)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            assert process.poll() is None, (tmp_path / "server.log").read_text()
            try:
                if client.get("/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        yield client
    finally:
        client.close()
        process.send_signal(signal.SIGTERM)
        process.wait(60)


def wait_for(client: httpx.Client, job_id: str, done: Any, timeout: float = 240) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    job: dict[str, Any] = {}
    while time.monotonic() < deadline:
        job = client.get(f"/v1/experiments/{job_id}").json()
        if done(job):
            return job
        time.sleep(0.5)
    raise AssertionError(f"{job_id} not there after {timeout} s: {job}")


def finished(job: dict[str, Any]) -> bool:
    return job["status"] in {"succeeded", "failed", "cancelled"}


def test_the_api_runs_a_job_on_ray_and_reports_every_store(
    api: httpx.Client, cluster: Cluster
) -> None:
    from mlflow.tracking import MlflowClient

    # The job service opens after the server listens: 503 until it is warm, then 200.
    deadline = time.monotonic() + 90
    ready = api.get("/readyz")
    while ready.status_code == 503 and time.monotonic() < deadline:
        time.sleep(0.5)
        ready = api.get("/readyz")
    assert ready.status_code == 200, ready.text
    assert ready.json()["stores"] == {
        "job_store": True,
        "tracking_store": True,
        "optuna_store": True,
        "ray_cluster": True,
    }
    job_id = api.post("/v1/experiments", content=spec(512, 0)).json()["id"]
    job = wait_for(api, job_id, finished)
    assert job["status"] == "succeeded", job["error"]
    assert job["result"]["timesteps"] == 512
    run = MlflowClient(cluster.mlflow_uri).get_run(job["mlflow_run_id"])
    assert run.info.status == "FINISHED"
    assert run.data.tags["ppo_platform.outcome"] == "completed"


TOTAL = 16384  # GridWorld env steps of the job killed mid-training


def test_a_killed_ray_worker_requeues_the_job_and_it_resumes(
    api: httpx.Client, cluster: Cluster
) -> None:
    from mlflow.tracking import MlflowClient

    from ppo_platform.jobs.store import JobStore
    from ppo_platform.tracking.tags import RESUMED_FROM_STEP

    # Long enough that the kill lands mid-training, not in the final save (checked below).
    job_id = api.post("/v1/experiments", content=spec(TOTAL, 512)).json()["id"]
    seen = wait_for(api, job_id, lambda j: j["progress"].get("timesteps", 0) >= 1024 or finished(j))
    assert seen["status"] == "running" and seen["progress"]["timesteps"] < TOTAL - 1024, seen
    store = JobStore(cluster.jobs_url, cluster.home, migrate_schema=False)
    try:
        pid = store.get(job_id).pid
    finally:
        store.close()
    assert pid, "the job records the pid of its Ray worker"
    os.kill(pid, signal.SIGKILL)  # the Ray worker process running the job

    job = wait_for(api, job_id, finished)
    assert job["status"] == "succeeded", job["error"]
    assert job["attempts"] >= 2
    store = JobStore(cluster.jobs_url, cluster.home, migrate_schema=False)
    try:
        events = store.events_after(job_id, 0)
    finally:
        store.close()
    reasons = [e.data.get("reason", "") for e in events if e.kind == "status"]
    assert any("its worker died" in reason for reason in reasons), reasons
    run = MlflowClient(cluster.mlflow_uri).get_run(job["mlflow_run_id"])
    assert run.info.status == "FINISHED"
    assert int(run.data.tags[RESUMED_FROM_STEP]) >= 512
    assert job["result"]["timesteps"] == TOTAL


def test_cancel_reaches_a_job_running_on_ray(api: httpx.Client, cluster: Cluster) -> None:
    from mlflow.tracking import MlflowClient

    job_id = api.post("/v1/experiments", content=spec(100_000, 512)).json()["id"]
    wait_for(api, job_id, lambda j: j["progress"].get("timesteps", 0) >= 512 or finished(j))
    assert api.post(f"/v1/experiments/{job_id}/cancel").status_code == 202
    job = wait_for(api, job_id, finished, timeout=120)
    assert job["status"] == "cancelled"
    assert job["result"]["timesteps"] < 100_000
    run = MlflowClient(cluster.mlflow_uri).get_run(job["mlflow_run_id"])
    assert run.info.status == "KILLED"


def test_a_sweep_job_runs_its_members_as_nested_ray_tasks(
    api: httpx.Client, cluster: Cluster
) -> None:
    text = spec(256, 0).replace("name: ray-job", "name: ray-sweep-job")
    text += "sweep: {grid: {update.epochs: [1, 2]}, seeds: [0]}\n"
    job_id = api.post("/v1/experiments", content=text).json()["id"]
    job = wait_for(api, job_id, finished)
    assert job["status"] == "succeeded", job["error"]
    assert [run["status"] for run in job["result"]["runs"]] == ["FINISHED", "FINISHED"]
    assert len(job["mlflow_run_ids"]) == 2


def test_cancel_stops_the_running_members_of_a_sweep_job_on_ray(
    api: httpx.Client, cluster: Cluster
) -> None:
    """The job's Ray worker gets the cancel (SIGINT reaches it) and cancels its members, which
    are other Ray tasks: the running member closes its run KILLED with a fresh checkpoint."""
    from mlflow.tracking import MlflowClient

    from ppo_platform.training.checkpoints import latest_checkpoint

    text = spec(200_000, 512).replace("name: ray-job", "name: ray-sweep-cancel")
    text += "sweep: {grid: {update.epochs: [1, 2]}, seeds: [0]}\n"
    job_id = api.post("/v1/experiments", content=text).json()["id"]
    client = MlflowClient(cluster.mlflow_uri)
    running = wait_for_member(client, cluster, "ray-sweep-cancel")
    assert api.post(f"/v1/experiments/{job_id}/cancel").status_code == 202
    job = wait_for(api, job_id, finished, timeout=240)  # before the kill at 300 s
    assert job["status"] == "cancelled", job
    # Closed by the member itself (a killed one stays RUNNING), mid-training, with a checkpoint.
    run = client.get_run(running)
    assert run.info.status == "KILLED"
    assert run.data.tags["ppo_platform.outcome"] == "cancelled"
    last = latest_checkpoint(cluster.home / "runs" / running / "checkpoints")
    assert last is not None and 512 <= last.timesteps < 200_000


def wait_for_member(client: Any, cluster: Cluster, experiment: str) -> str:
    """The id of a sweep member run that is RUNNING and has saved a checkpoint."""
    from ppo_platform.training.checkpoints import latest_checkpoint

    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        found = client.get_experiment_by_name(experiment)
        runs = client.search_runs([found.experiment_id]) if found else []
        for run in runs:
            folder = cluster.home / "runs" / run.info.run_id / "checkpoints"
            if run.info.status == "RUNNING" and latest_checkpoint(folder):
                return str(run.info.run_id)
        time.sleep(0.5)
    raise AssertionError(f"no member of {experiment} trained to a checkpoint in 180 s")
