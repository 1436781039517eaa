"""A batch of seeds, stopped: SIGTERM (and Ctrl-C to the group) close every seed's run KILLED
with a checkpoint and the parent KILLED (exit 143 / 130, no traceback), on the compiled path
where the seeds train together; `run --resume PARENT` then finishes the batch: a finished seed
stays, a stopped one continues from its checkpoint, one not started yet starts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hostile_cli import grid_spec
from mlflow.tracking import MlflowClient

from ppo_platform.settings import get_settings
from ppo_platform.tracking import tags
from ppo_platform.training.resume import resumable

COMPILED = """\
name: batch-compiled
env: {id: CartPole-v1, n_envs: 4}
compiled: 'on'
rollout: {n_steps: 32}
update: {epochs: 2, minibatch_size: 128}
budget: {total_timesteps: 2000000, seeds: '0-2'}
evaluation: {every_timesteps: 1024, episodes: 1}
checkpoints: {every_timesteps: 1024, keep_last: 1}
"""


def _start(platform_home: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PPO_PLATFORM_HOME": str(platform_home), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "ppo_platform.cli", "run", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _wait_for_checkpoints(platform_home: Path, runs: int, timeout: float = 240) -> None:
    """Until `runs` run folders hold a checkpoint."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        folders = (platform_home / "runs").glob("*/checkpoints")
        if sum(any(folder.glob("*.zip")) for folder in folders) >= runs:
            return
        time.sleep(0.2)
    raise AssertionError(f"{runs} runs did not checkpoint in {timeout} s")


def _batch(platform_home: Path, experiment: str) -> tuple[Any, list[Any]]:
    client = MlflowClient(f"sqlite:///{platform_home / 'mlflow.db'}")
    found = client.get_experiment_by_name(experiment)
    runs = client.search_runs([found.experiment_id])
    [parent] = [r for r in runs if r.data.tags.get(tags.KIND) == "seeds"]
    children = [r for r in runs if r.data.tags.get(tags.PARENT_RUN_ID) == parent.info.run_id]
    return parent, sorted(children, key=lambda r: int(r.data.tags[tags.SEED]))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sig", "code", "reason"),
    [(signal.SIGTERM, 143, "terminated (SIGTERM)"), (signal.SIGINT, 130, "interrupted")],
    ids=["sigterm", "sigint"],
)
def test_a_signal_to_a_compiled_batch_checkpoints_and_kills_every_seed(
    platform_home: Path, tmp_path: Path, sig: int, code: int, reason: str
) -> None:
    spec = tmp_path / "batch.yaml"
    spec.write_text(COMPILED)
    process = _start(platform_home, str(spec))
    _wait_for_checkpoints(platform_home, 3)
    os.killpg(process.pid, sig)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == code, stderr
    assert "Traceback" not in stderr, stderr
    parent, children = _batch(platform_home, "batch-compiled")
    assert parent.info.status == "KILLED"
    assert [r.data.tags[tags.SEED] for r in children] == ["0", "1", "2"]
    for run in children:
        assert run.info.status == "KILLED" and run.data.tags[tags.FAILURE] == reason
        assert run.data.tags[tags.TRAINING_PATH] == "compiled"
        found = resumable(get_settings(), run.info.run_id)
        assert found.checkpoint.timesteps >= 1024 and found.spec.budget.seeds is None


@pytest.mark.slow
def test_resume_finishes_a_stopped_batch_keeping_what_it_had_trained(
    platform_home: Path, tmp_path: Path
) -> None:
    spec = tmp_path / "batch.yaml"
    spec.write_text(
        grid_spec("batch-torch", 6144, every=512).replace("seed: 0}", "seeds: [4, 5, 6]}")
    )
    process = _start(platform_home, str(spec))
    _wait_for_checkpoints(platform_home, 2)  # seed 4 finished, seed 5 has a checkpoint
    os.killpg(process.pid, signal.SIGTERM)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 143, stderr
    parent, children = _batch(platform_home, "batch-torch")
    assert parent.info.status == "KILLED"
    assert [(r.data.tags[tags.SEED], r.info.status) for r in children] == [
        ("4", "FINISHED"),
        ("5", "KILLED"),
    ]
    stopped_at = resumable(get_settings(), children[1].info.run_id).checkpoint.timesteps
    resumed = _start(platform_home, "--resume", parent.info.run_id)
    stdout, stderr = resumed.communicate(timeout=240)
    assert resumed.returncode == 0, stderr
    assert "3 of 3 seeds ended" in stdout and "seed 4: finished before the resume" in stdout
    parent, children = _batch(platform_home, "batch-torch")
    assert parent.info.status == "FINISHED"
    assert [(r.data.tags[tags.SEED], r.info.status) for r in children] == [
        ("4", "FINISHED"),
        ("5", "FINISHED"),
        ("6", "FINISHED"),
    ]
    assert children[1].data.tags[tags.RESUMED_FROM_STEP] == str(stopped_at)
    client = MlflowClient(get_settings().tracking_uri)
    steps = [m.step for m in client.get_metric_history(children[1].info.run_id, "train/approx_kl")]
    assert steps == sorted(set(steps)) and steps[-1] >= 6144  # one curve, trained to the end
