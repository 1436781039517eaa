"""Class 3: no run is left RUNNING. Ctrl-C to the whole process group (what a terminal sends)
and SIGTERM close the run KILLED with a checkpoint (exit 130 / 143, no traceback); a run whose
process was SIGKILLed is marked KILLED by the next start and stays resumable."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostile_cli import TINY_GRID, cli, grid_spec
from mlflow.tracking import MlflowClient

from ppo_platform.settings import get_settings
from ppo_platform.tracking import tags
from ppo_platform.tracking.liveness import owner_is_gone, process_start, this_process
from ppo_platform.tracking.writer import WriterProcess
from ppo_platform.training.resume import resumable

LONG_GRID = grid_spec("hostile-long", 1_000_000, every=256)


def _start(platform_home: Path, spec: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PPO_PLATFORM_HOME": str(platform_home), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "ppo_platform.cli", "run", str(spec), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal gives a command
    )


def _wait_for_training(process: subprocess.Popen[str], evals: int = 2) -> None:
    assert process.stdout is not None
    deadline, seen = time.monotonic() + 240, 0
    for line in process.stdout:
        seen += line.startswith("eval  step")
        if seen >= evals or time.monotonic() > deadline:
            return


def _only_run(platform_home: Path) -> object:
    client = MlflowClient(f"sqlite:///{platform_home / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("hostile-long")
    assert experiment is not None
    [run] = client.search_runs([experiment.experiment_id])
    return run


@pytest.fixture
def long_spec(tmp_path: Path) -> Path:
    path = tmp_path / "long.yaml"
    path.write_text(LONG_GRID)
    return path


@pytest.mark.slow
@pytest.mark.parametrize(
    ("send", "code", "reason"),
    [
        (lambda p: os.killpg(p.pid, signal.SIGINT), 130, "interrupted"),
        (lambda p: os.killpg(p.pid, signal.SIGTERM), 143, "terminated (SIGTERM)"),
        (lambda p: p.send_signal(signal.SIGTERM), 143, "terminated (SIGTERM)"),
    ],
    ids=["sigint-to-group", "sigterm-to-group", "sigterm-to-process"],
)
def test_a_signal_closes_the_run_killed_with_a_checkpoint(
    platform_home: Path, long_spec: Path, send: object, code: int, reason: str
) -> None:
    process = _start(platform_home, long_spec)
    _wait_for_training(process)
    send(process)  # type: ignore[operator]
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == code, stderr
    assert "Traceback" not in stderr and "MetricsWriteError" not in stderr
    run = _only_run(platform_home)
    assert run.info.status == "KILLED"  # type: ignore[attr-defined]
    assert run.data.tags[tags.FAILURE] == reason  # type: ignore[attr-defined]
    found = resumable(get_settings(), run.info.run_id)  # type: ignore[attr-defined]
    assert found.checkpoint.timesteps >= 256


@pytest.mark.slow
def test_a_sigkilled_run_is_marked_killed_by_the_next_start_and_stays_resumable(
    platform_home: Path, long_spec: Path, tmp_path: Path
) -> None:
    process = _start(platform_home, long_spec)
    _wait_for_training(process, evals=3)
    os.killpg(process.pid, signal.SIGKILL)
    process.communicate(timeout=60)
    assert _only_run(platform_home).info.status == "RUNNING"  # type: ignore[attr-defined]
    # The next start on this home: a spec that is refused still reaps (before its checks).
    nxt = _start(platform_home, long_spec, "--set", "update.epochs=99")
    _, stderr = nxt.communicate(timeout=120)
    assert nxt.returncode == 2
    run = _only_run(platform_home)
    assert run.info.status == "KILLED", stderr  # type: ignore[attr-defined]
    assert "is gone" in run.data.tags[tags.FAILURE]  # type: ignore[attr-defined]
    assert f"--resume {run.info.run_id}" in stderr  # type: ignore[attr-defined]
    assert resumable(get_settings(), run.info.run_id).checkpoint.timesteps >= 256  # type: ignore[attr-defined]


def test_the_metrics_writer_does_not_share_the_terminals_process_group() -> None:
    writer = WriterProcess()
    try:
        assert os.getpgid(writer.process.pid) != os.getpgid(0)
        assert os.getsid(writer.process.pid) != os.getsid(0)
    finally:
        assert writer.process.stdin is not None
        writer.process.stdin.close()
        writer.process.wait(timeout=30)


def test_owner_liveness_by_pid_and_process_start_time() -> None:
    host = socket.gethostname()
    assert not owner_is_gone(this_process())
    me = os.getpid()
    assert owner_is_gone(f"{host}:{me}:{int(process_start(me) or 0) + 1}")  # pid reused
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert owner_is_gone(f"{host}:{child.pid}:1")
    assert not owner_is_gone(f"another-{host}:{child.pid}:1")  # other hosts are not judged
    assert not owner_is_gone("garbage")


def test_runs_record_their_owner_process(platform_home: Path, tmp_path: Path) -> None:
    spec = tmp_path / "tiny.yaml"
    spec.write_text(TINY_GRID)
    assert cli("run", str(spec)).exit_code == 0
    client = MlflowClient(get_settings().tracking_uri)
    experiment = client.get_experiment_by_name("hostile-tiny")
    assert experiment is not None
    [run] = client.search_runs([experiment.experiment_id])
    assert run.data.tags[tags.PROCESS] == this_process()
