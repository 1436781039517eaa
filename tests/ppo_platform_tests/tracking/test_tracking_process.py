"""The tracking process: MLflow stays out of the training process, and nothing is lost
silently when either process dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from ppo_platform.errors import TrackingError
from ppo_platform.settings import get_settings
from ppo_platform.tracking import tags
from ppo_platform.tracking.remote import shared_tracking_process
from ppo_platform.training.progress import ProgressEvent
from ppo_platform.training.runner import run_spec
from tests.ppo_platform_tests.training.test_runner import tiny_spec

REPO = Path(__file__).resolve().parents[3]
CHILD_ENV = {"PYTHONPATH": f"{REPO / 'platform'}{os.pathsep}{REPO}"}


def _only_run(home: Path) -> object:
    client = MlflowClient(f"sqlite:///{home / 'mlflow.db'}")
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    assert len(runs) == 1
    return runs[0]


def _wait_for_a_run(home: Path, timeout: float = 120.0) -> None:
    """Until the tracking process has created a run (its folder; MLflow is not polled, so
    that this process does not race it creating the store's tables)."""
    deadline = time.monotonic() + timeout
    while not (home / "runs").is_dir() or not any((home / "runs").iterdir()):
        assert time.monotonic() < deadline, "the tracking process created no run"
        time.sleep(0.1)


TRAIN_AND_REPORT_MODULES = textwrap.dedent(
    """
    import sys
    from ppo_platform.spec.loader import validate_data
    from ppo_platform.training.runner import run_spec

    spec = validate_data({
        "name": "no-mlflow", "env": {"id": "CartPole-v1", "n_envs": 2},
        "rollout": {"n_steps": 64}, "budget": {"total_timesteps": 256, "seed": 0},
        "evaluation": {"every_timesteps": 128, "episodes": 2},
    })
    result = run_spec(spec)
    loaded = sorted(m for m in ("mlflow", "matplotlib", "sqlalchemy") if m in sys.modules)
    print(result.status, result.run_id, ",".join(loaded) or "none")
    """
)


def test_a_training_process_never_imports_mlflow_or_matplotlib(platform_home: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", TRAIN_AND_REPORT_MODULES],
        env={**os.environ, **CHILD_ENV},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    status, run_id, loaded = done.stdout.split()
    assert (status, loaded) == ("FINISHED", "none")
    run = _only_run(platform_home)
    assert run.info.run_id == run_id and run.info.status == "FINISHED"  # type: ignore[attr-defined]
    client = MlflowClient(get_settings().tracking_uri)
    evals = client.get_metric_history(run_id, "eval/mean_reward")
    assert sorted(m.step for m in evals) == [128, 256]
    assert {a.path for a in client.list_artifacts(run_id, "plots")} == {"plots/training_curves.png"}
    assert run.data.tags[tags.PROCESS].split(":")[1] != str(os.getpid())  # type: ignore[attr-defined]


def test_a_dead_tracking_process_fails_the_run_loudly_with_the_reason(
    platform_home: Path,
) -> None:
    process = shared_tracking_process()
    killed: list[int] = []

    def kill_the_tracking_process(event: ProgressEvent) -> None:
        if event.kind == "update" and not killed:
            _wait_for_a_run(platform_home)  # killed after it created the run, mid-training
            killed.append(process.process.pid)
            os.kill(process.process.pid, signal.SIGKILL)

    settings = get_settings().model_copy(update={"metrics_flush_seconds": 0.001})
    with pytest.raises(TrackingError, match=r"tracking process \(pid \d+\) died \(signal SIGKILL"):
        run_spec(tiny_spec(), settings=settings, on_progress=kill_the_tracking_process)
    run = _only_run(platform_home)
    assert run.info.status == "FAILED"  # type: ignore[attr-defined]
    assert "SIGKILL" in run.data.tags[tags.FAILURE]  # type: ignore[attr-defined]
    assert shared_tracking_process().process.pid != killed[0]  # the next run gets a new one


_NOISY_SERVICE = """
from ppo_platform.tracking import callers, service

answer = service.TrackingService.handle


def noisy(self, request):
    print("View run at http://mlflow:5000/#/...")  # what MLflow prints for a tracking server
    return answer(self, request)


service.TrackingService.handle = noisy
callers.main()
"""


def test_what_libraries_print_in_the_tracking_process_never_reaches_the_reply_pipe() -> None:
    # MLflow prints "View run ..." links on stdout when it logs to a tracking server; the
    # replies travel on the process's stdout, so a print there once hung every such run.
    done = subprocess.run(
        [sys.executable, "-c", _NOISY_SERVICE],
        input='{"op": "no_such_op", "seq": 7}\n',
        env={**os.environ, **CHILD_ENV},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        '{"error": "no_such_op: KeyError: \'no_such_op\'", "seq": 7}'
    ]
    assert "View run at http://mlflow:5000" in done.stderr


def test_a_torn_request_line_ends_the_tracking_process_cleanly() -> None:
    # A training process killed mid-write leaves half a line: the service finishes, no crash.
    done = subprocess.run(
        [sys.executable, "-m", "ppo_platform.tracking.callers"],
        input='{"op": "rows", "seq": 1, "ro',
        env={**os.environ, **CHILD_ENV},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


def test_a_run_that_fails_while_finishing_is_closed_failed_with_the_reason(
    platform_home: Path,
) -> None:
    def block_the_final_folder(event: ProgressEvent) -> None:
        if event.kind == "update":
            _wait_for_a_run(platform_home)
            (run_dir,) = (platform_home / "runs").iterdir()
            (run_dir / "final").touch()  # the final model's folder cannot be created

    with pytest.raises(FileExistsError):
        run_spec(tiny_spec(), on_progress=block_the_final_folder)
    run = _only_run(platform_home)
    assert run.info.status == "FAILED"  # type: ignore[attr-defined]
    assert run.data.tags[tags.FAILURE].startswith("FileExistsError while finishing")  # type: ignore[attr-defined]


def test_a_new_run_closes_one_its_worker_left_open_failed(platform_home: Path) -> None:
    from ppo_platform.tracking.service import SUPERSEDED_REASON, TrackingService

    uri = get_settings().tracking_uri
    service = TrackingService()

    def open_run(name: str, seq: int) -> str:
        return service.open(
            {
                "seq": seq,
                "uri": uri,
                "experiment": "superseded",
                "artifact_root": None,
                "tags": {"mlflow.runName": name},
                "params": {},
                "spec_text": "name: x\n",
                "runs_dir": str(platform_home / "runs"),
            }
        )["run_id"]

    first = open_run("left-open", 1)
    second = open_run("next", 2)
    client = MlflowClient(uri)
    assert client.get_run(first).info.status == "FAILED"
    assert client.get_run(first).data.tags[tags.FAILURE] == SUPERSEDED_REASON
    assert client.get_run(second).info.status == "RUNNING"
