"""Class 3: no run is left RUNNING. Ctrl-C to the whole process group (what a terminal sends)
and SIGTERM close the run KILLED with a checkpoint (exit 130 / 143, no traceback); a run whose
process was SIGKILLed is marked KILLED by the next start and stays resumable."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hostile_cli import TINY_GRID, cli, grid_spec
from mlflow.tracking import MlflowClient

from ppo_platform.settings import get_settings
from ppo_platform.tracking import tags
from ppo_platform.tracking.liveness import owner_is_gone, process_start, this_process
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


def _tracking_process(pid: int) -> int:
    """The tracking process of training process `pid` (its only child, in its own session)."""
    [child] = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return int(child)


def _wait_gone(pid: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)


@pytest.mark.slow
def test_a_sigkilled_training_process_is_closed_killed_by_its_tracking_process(
    platform_home: Path, long_spec: Path
) -> None:
    process = _start(platform_home, long_spec)
    _wait_for_training(process)
    tracking = _tracking_process(process.pid)
    os.killpg(process.pid, signal.SIGKILL)  # the tracking process has its own session
    process.communicate(timeout=60)
    _wait_gone(tracking)
    run = _only_run(platform_home)
    assert run.info.status == "KILLED"  # type: ignore[attr-defined]
    assert "training process exited" in run.data.tags[tags.FAILURE]  # type: ignore[attr-defined]
    assert resumable(get_settings(), run.info.run_id).checkpoint.timesteps >= 256  # type: ignore[attr-defined]


@pytest.mark.slow
def test_a_sigkilled_run_is_marked_killed_by_the_next_start_and_stays_resumable(
    platform_home: Path, long_spec: Path, tmp_path: Path
) -> None:
    process = _start(platform_home, long_spec)
    _wait_for_training(process, evals=3)
    tracking = _tracking_process(process.pid)
    os.kill(tracking, signal.SIGKILL)  # both processes gone (the OOM killer, a reboot)
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


def test_the_tracking_process_does_not_share_the_terminals_process_group() -> None:
    from ppo_platform.tracking.process import TrackingProcess

    tracking = TrackingProcess()
    try:
        assert os.getpgid(tracking.process.pid) != os.getpgid(0)
        assert os.getsid(tracking.process.pid) != os.getsid(0)
    finally:
        tracking.close()


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


# A sweep and a study stopped by a signal: the parent run is KILLED, no member or trial run is
# left RUNNING, and queued members never start.
SWEEP_SPEC = grid_spec("hostile-sweep", 1_000_000, every=256) + (
    "sweep: {grid: {update.epochs: [1, 2]}, seeds: [0]}\n"
)
TUNE_SPEC = grid_spec("hostile-study", 1_000_000, every=256) + (
    "tune:\n"
    "  n_trials: 3\n"
    "  seeds_per_trial: 1\n"
    "  sampler: {type: random, seed: 0}\n"
    "  pruner: {type: none}\n"
    "  space: {update.epochs: {type: int, low: 1, high: 2}}\n"
)
SIGNALS = [(signal.SIGTERM, 143), (signal.SIGINT, 130)]


def _command(platform_home: Path, tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PPO_PLATFORM_HOME": str(platform_home),
        "PPO_PLATFORM_OUTPUTS_DIR": str(tmp_path / "outputs"),
        "PYTHONUNBUFFERED": "1",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "ppo_platform.cli", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _runs(platform_home: Path, experiment: str) -> list[Any]:
    client = MlflowClient(f"sqlite:///{platform_home / 'mlflow.db'}")
    found = client.get_experiment_by_name(experiment)
    return [] if found is None else client.search_runs([found.experiment_id])


def _running_parent(platform_home: Path) -> str | None:
    """The id of a RUNNING top-level run (a sweep's or a study's, not a trial's) with a RUNNING
    child, read with sqlite3 alone: an MLflow client would race the command creating the
    store's tables."""
    query = (
        "SELECT t.value FROM runs r JOIN tags t ON t.run_uuid = r.run_uuid "
        "WHERE t.key = 'mlflow.parentRunId' AND r.status = 'RUNNING' AND t.value IN "
        "(SELECT run_uuid FROM runs WHERE status = 'RUNNING') AND t.value NOT IN "
        "(SELECT run_uuid FROM tags WHERE key = 'mlflow.parentRunId')"
    )
    try:
        with contextlib.closing(sqlite3.connect(platform_home / "mlflow.db", timeout=5)) as db:
            row = db.execute(query).fetchone()
    except sqlite3.OperationalError:  # not created yet
        return None
    return None if row is None else str(row[0])


def _wait_for_a_running_child(platform_home: Path) -> str:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        time.sleep(0.5)
        if (platform_home / "mlflow.db").exists() and (found := _running_parent(platform_home)):
            return found
    raise AssertionError("no child run started")


def _described(runs: list[Any]) -> list[tuple[str, str, str | None]]:
    """(name, status, failure tag) of each run, oldest first: what a failed assert shows."""
    ordered = sorted(runs, key=lambda r: r.info.start_time)
    return [(r.info.run_name, r.info.status, r.data.tags.get(tags.FAILURE)) for r in ordered]


def _stop_and_check(
    platform_home: Path, process: subprocess.Popen[str], experiment: str, sig: int, code: int
) -> str:
    """Signal the command once a member runs; its stderr once it has exited cleanly."""
    parent_id = _wait_for_a_running_child(platform_home)
    time.sleep(1)  # a few evaluations into the member
    os.killpg(process.pid, sig)
    _, stderr = process.communicate(timeout=90)
    assert process.returncode == code, stderr
    assert "Traceback" not in stderr, stderr
    runs = {r.info.run_id: r for r in _runs(platform_home, experiment)}
    assert runs[parent_id].info.status == "KILLED"
    described = _described(list(runs.values()))
    assert [name for name, status, _ in described if status == "RUNNING"] == [], described
    return stderr


def _next_start_leaves_nothing_running(
    platform_home: Path, tmp_path: Path, experiment: str, *args: str
) -> None:
    nxt = _command(platform_home, tmp_path, *args, "--set", "update.epochs=99")
    _, stderr = nxt.communicate(timeout=120)
    assert nxt.returncode == 2, stderr
    statuses = [r.info.status for r in _runs(platform_home, experiment)]
    assert "RUNNING" not in statuses and "KILLED" in statuses


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code"), SIGNALS, ids=["sigterm", "sigint"])
def test_a_signal_to_a_sweep_kills_its_parent_and_starts_no_more_members(
    platform_home: Path, tmp_path: Path, sig: int, code: int
) -> None:
    spec = tmp_path / "sweep.yaml"
    spec.write_text(SWEEP_SPEC)
    args = ("sweep", str(spec), "--workers", "1")
    process = _command(platform_home, tmp_path, *args)
    stderr = _stop_and_check(platform_home, process, "hostile-sweep", sig, code)
    described = _described(_runs(platform_home, "hostile-sweep"))
    # The first member was stopped KILLED; the second never started.
    assert [(name, status) for name, status, _ in described] == [
        ("hostile-sweep", "KILLED"),
        ("hostile-sweep-epochs1-s0", "KILLED"),
    ], (described, stderr)
    _next_start_leaves_nothing_running(platform_home, tmp_path, "hostile-sweep", *args)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sig", "code", "workers"),
    [(signal.SIGTERM, 143, "1"), (signal.SIGINT, 130, "2")],
    ids=["sigterm-in-process", "sigint-to-worker-processes"],
)
def test_a_signal_to_a_study_kills_its_parent_and_leaves_no_trial_running(
    platform_home: Path, tmp_path: Path, sig: int, code: int, workers: str
) -> None:
    spec = tmp_path / "study.yaml"
    spec.write_text(TUNE_SPEC)
    args = ("tune", str(spec), "--workers", workers)
    process = _command(platform_home, tmp_path, *args)
    _stop_and_check(platform_home, process, "hostile-study", sig, code)
    described = _described(_runs(platform_home, "hostile-study"))
    assert described[0][:2] == ("tune-hostile-study", "KILLED"), described
    # Each interrupted trial's run (Optuna: FAIL, "interrupted") is KILLED, as its seed's run.
    reason = "terminated (SIGTERM)" if sig == signal.SIGTERM else "interrupted"
    trials = [(status, why) for name, status, why in described if name.startswith("trial-")]
    assert trials and set(trials) == {("KILLED", reason)}, described
    _next_start_leaves_nothing_running(platform_home, tmp_path, "hostile-study", *args)
