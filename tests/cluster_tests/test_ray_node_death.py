"""A whole Ray node dying mid-job (not just a worker process): the job is re-queued and resumes
from its last checkpoint on the nodes that are left.

The two-node cluster is shared by every cluster test, so this test adds a third node of its own
and kills that one (its raylet and everything started in its process group, SIGKILL, as a
machine that loses power): `ray stop` would stop every Ray process on this machine. Both CPUs of
the shared nodes are held by sleeping tasks while the job starts, so the job can only land on
the new node; they are released once the node is dead.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from cluster_services import READY_LINE, Cluster, _bin

from ppo_platform.execution.base import Task
from ppo_platform.jobs import Dispatcher, JobStore, ServiceSettings, prepare_submission
from ppo_platform.jobs.models import TERMINAL

pytestmark = pytest.mark.slow
TOTAL = 16384
SPEC = f"""name: ray-node-death
env: {{id: ppo_platform/GridWorld-v0, n_envs: 1}}
rollout: {{n_steps: 64}}
update: {{epochs: 2, minibatch_size: 64}}
budget: {{total_timesteps: {TOTAL}}}
evaluation: {{every_timesteps: 0, episodes: 2}}
checkpoints: {{every_timesteps: 512}}
"""


def wait_until(check: object, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.3)
    raise AssertionError(f"{what} within {seconds} s")


def start_node(address: str, log: Path) -> subprocess.Popen[bytes]:
    command = [_bin("ray"), "start", f"--address={address}", "--num-cpus=1", "--block"]
    with log.open("wb") as out:
        node = subprocess.Popen(
            [*command, "--disable-usage-stats"],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    wait_until(lambda: READY_LINE in log.read_text(), 120, "the third Ray node came up")
    return node


def kill_node(node: subprocess.Popen[bytes]) -> None:
    """SIGKILL the node's process group (its raylet and the processes started with it)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(node.pid, signal.SIGKILL)
    node.wait(30)


def test_a_dying_node_requeues_its_job_and_it_resumes_elsewhere(
    cluster: Cluster, tmp_path: Path
) -> None:
    import ray
    from mlflow.tracking import MlflowClient

    from ppo_platform.execution.ray_executor import RayExecutor
    from ppo_platform.tracking.tags import RESUMED_FROM_STEP
    from ppo_platform.training.checkpoints import latest_checkpoint

    blockers = RayExecutor(cluster.ray_address)
    for index in range(2):  # the shared nodes' CPUs, one each
        blockers.submit(Task(f"block{index}", time.sleep, (600,)))
    wait_until(lambda: ray.available_resources().get("CPU", 0) < 1, 60, "blockers running")
    node = start_node(cluster.ray_address, tmp_path / "node3.log")
    store = JobStore(cluster.jobs_url, cluster.home)
    dispatcher = Dispatcher(
        store, ServiceSettings(jobs_concurrency=1), cluster.home / "dispatcher.lock"
    )
    dispatcher.start()
    try:
        job_id = store.submit("alice", prepare_submission(SPEC, 10**7), None, 10)[0].id

        def checkpointed() -> bool:
            run_id = store.get(job_id).mlflow_run_id
            folder = cluster.home / "runs" / str(run_id) / "checkpoints"
            return bool(run_id) and latest_checkpoint(folder) is not None

        wait_until(checkpointed, 180, "the job saved a checkpoint on the new node")
        assert store.get(job_id).status == "running"
        folder = cluster.home / "runs" / str(store.get(job_id).mlflow_run_id) / "checkpoints"
        kill_node(node)
        killed_at = time.time()
        wait_until(
            lambda: store.get(job_id).attempts >= 2 or store.get(job_id).status in TERMINAL,
            120,
            "the job was re-queued after its node died",
        )
        # The dead node's worker stopped with its node: nothing of the run was written after
        # (it leads its own process group, so the node's SIGKILL does not reach it; it stops
        # itself within NODE_CHECK_SECONDS of its raylet's death).
        late = [p.name for p in folder.glob("*") if p.stat().st_mtime > killed_at + 1.0]
        assert not late, f"written by the dead node's worker after its node died: {late}"
        for key in ("block0", "block1"):
            blockers.kill(key)  # the shared nodes take the job over
        wait_until(lambda: store.get(job_id).status in TERMINAL, 240, "the job finished")
        job = store.get(job_id)
        assert job.status == "succeeded", job.error
        assert job.attempts == 2 and job.result["timesteps"] == TOTAL
        reasons = [e.data.get("reason", "") for e in store.events_after(job_id, 0)]
        assert any("its worker died" in reason for reason in reasons), reasons
        run = MlflowClient(cluster.mlflow_uri).get_run(job.mlflow_run_id)
        assert run.info.status == "FINISHED"
        assert int(run.data.tags[RESUMED_FROM_STEP]) >= 512
    finally:
        dispatcher.stop()
        blockers.shutdown(wait=False, cancel_pending=True)
        for key in ("block0", "block1"):
            blockers.kill(key)
        kill_node(node)
        store.close()
