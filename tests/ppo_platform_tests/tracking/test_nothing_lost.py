"""Nothing lost: the training process killed (SIGKILL) at random points; every metric row the
tracking process acknowledged is in MLflow, and no run is left RUNNING."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

REPO = Path(__file__).resolve().parents[3]

# The training process: journals every metric row the tracking process acknowledged.
TRAIN_WITH_JOURNAL = textwrap.dedent(
    """
    import json, sys
    from ppo_platform.spec.loader import validate_data
    from ppo_platform.tracking.remote import ack_listeners
    from ppo_platform.training.runner import run_spec

    journal = open(sys.argv[1], "a", buffering=1)

    def record(rows):
        journal.write("".join(json.dumps([k, s, v]) + "\\n" for k, v, _, s in rows))

    ack_listeners.append(record)
    spec = validate_data({
        "name": "kill-me", "env": {"id": "CartPole-v1", "n_envs": 4},
        "rollout": {"n_steps": 32}, "update": {"epochs": 2, "minibatch_size": 64},
        "budget": {"total_timesteps": 1_000_000, "seed": 0},
        "evaluation": {"every_timesteps": 1024, "episodes": 2},
        "checkpoints": {"every_timesteps": 4096},
    })
    run_spec(spec)
    """
)


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(child) for child in text.split()]


def _wait_gone(pid: int, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        stat = Path(f"/proc/{pid}/stat").read_text(errors="replace")
        if stat.rpartition(")")[2].split()[0] == "Z":  # a zombie has finished its work
            return
        time.sleep(0.1)
    assert not Path(f"/proc/{pid}").exists() or time.monotonic() < deadline


def _kill_at(home: Path, mid_training: bool, delay: float) -> tuple[Path, int]:
    """Start the training process, SIGKILL it `delay` s after its start (or after the first
    acknowledged rows), wait for its tracking process to finish; journal, tracking processes."""
    journal = home / "acknowledged.jsonl"
    home.mkdir(parents=True)
    env = {
        **os.environ,
        "PYTHONPATH": f"{REPO / 'platform'}{os.pathsep}{REPO}",
        "PPO_PLATFORM_HOME": str(home),
        "PPO_PLATFORM_METRICS_FLUSH_SECONDS": "0.05",
    }
    child = subprocess.Popen(
        [sys.executable, "-c", TRAIN_WITH_JOURNAL, str(journal)],
        env=env,
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 240
    while mid_training and not (journal.exists() and journal.stat().st_size):
        assert time.monotonic() < deadline, "no metric row was acknowledged"
        time.sleep(0.05)
    time.sleep(delay)
    tracking = _children(child.pid)  # the tracking process (none if killed before its start)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=60)
    for pid in tracking:
        _wait_gone(pid)
    return journal, len(tracking)


def _stored(client: MlflowClient, run_id: str, keys: set[str]) -> set[tuple[str, int, float]]:
    return {(key, m.step, m.value) for key in keys for m in client.get_metric_history(run_id, key)}


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_killing_the_training_process_loses_no_acknowledged_row(tmp_path: Path, seed: int) -> None:
    draw = random.Random(seed)
    mid_training = seed > 0  # seed 0: somewhere in the start (imports, run creation)
    delay = draw.uniform(0.5, 4.0) if mid_training else draw.uniform(0.0, 3.0)
    home = tmp_path / "home"
    journal, trackers = _kill_at(home, mid_training, delay)
    acknowledged = (
        {
            (key, step, value)
            for key, step, value in (json.loads(line) for line in journal.read_text().splitlines())
        }
        if journal.exists()
        else set()
    )
    if not (home / "mlflow.db").exists():
        assert not acknowledged  # killed before anything was stored
        return
    client = MlflowClient(f"sqlite:///{home / 'mlflow.db'}")
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    assert trackers == 1 and len(runs) <= 1
    assert all(run.info.status in ("FAILED", "KILLED") for run in runs)
    if mid_training:
        assert acknowledged and len(runs) == 1  # killed mid-training, after rows were stored
    if runs:
        stored = _stored(client, runs[0].info.run_id, {key for key, _, _ in acknowledged})
        assert acknowledged <= stored
        assert runs[0].data.tags["ppo_platform.outcome"] == "killed"
