"""A finished `ppo-platform run` ends without the interpreter's teardown, but only after its
tracking process confirmed everything durable and exited; the time marks show that order."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from mlflow.tracking import MlflowClient

from ppo_platform.tracing import TRACE_ENV
from tests.ppo_platform_tests.hostile.hostile_cli import TINY_GRID

REPO = Path(__file__).resolve().parents[2]


def _marks(stderr: str) -> list[str]:
    lines = [line for line in stderr.splitlines() if line.startswith("trace ")]
    return [line.split(" ", 4)[4].split("\t")[0] for line in lines]  # the label, not the CPU


def test_a_finished_run_exits_at_once_after_its_tracking_process_made_all_durable(
    platform_home: Path, tmp_path: Path
) -> None:
    spec = tmp_path / "tiny.yaml"
    spec.write_text(TINY_GRID)
    env = {
        **os.environ,
        "PPO_PLATFORM_HOME": str(platform_home),
        "PYTHONPATH": f"{REPO / 'platform'}{os.pathsep}{REPO}",
        TRACE_ENV: "1",
    }
    done = subprocess.run(
        [sys.executable, "-m", "ppo_platform.cli", "run", str(spec), "--quiet"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("completed: run ")
    marks = _marks(done.stderr)
    order = [
        "cli: tracking process started early",  # before the CLI's own imports: one process
        "cli: run command",
        "tracking: finish answered",
        "finish: tracking process confirmed all durable",
        "tracking: os._exit",
        "tracking close: exited",
        "atexit: handlers done",
        "process_exit: os._exit",
    ]
    positions = [marks.index(mark) for mark in order]  # ValueError if one is missing
    assert positions == sorted(positions), marks
    assert marks.count("tracking: serving, importing mlflow") == 1, marks
    run_id = done.stdout.split()[2].rstrip(",")
    run = MlflowClient(f"sqlite:///{platform_home / 'mlflow.db'}").get_run(run_id)
    assert run.info.status == "FINISHED"
    with zipfile.ZipFile(platform_home / "runs" / run_id / "final" / "model.zip") as model:
        assert model.testzip() is None  # complete on disk: nothing was cut short
    assert (platform_home / "runs" / run_id / "training_curves.png").stat().st_size > 10_000


# In a fresh interpreter: pytest's own process may hold other tests' non-daemon threads.
EXIT_WHEN_ALONE = """
import threading
from ppo_platform.process_exit import exit_now, only_main_thread_left
release = threading.Event()
worker = threading.Thread(target=release.wait, args=(30,), daemon=False)  # bounded
worker.start()
exit_now(3)  # returns: the worker's work would be cut short
print("returned while the worker ran", flush=True)
release.set()
worker.join()
print(f"alone: {only_main_thread_left()}", flush=True)
exit_now(7)  # ends the process here, with this code
print("not reached", flush=True)
"""


def test_exit_now_returns_while_another_thread_works_and_exits_once_alone() -> None:
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'platform'}{os.pathsep}{REPO}"}
    done = subprocess.run(
        [sys.executable, "-c", EXIT_WHEN_ALONE],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 7, done.stderr
    assert done.stdout.splitlines() == ["returned while the worker ran", "alone: True"]


def test_a_sweep_starts_its_tracking_process_and_fork_server_early_once_as_the_console_script(
    platform_home: Path, tmp_path: Path
) -> None:
    """`ppo-platform sweep` (the installed console script, whose main module every worker
    runs again as it starts) starts one tracking process and one fork server before its own
    imports; the workers, forked from that server, start neither."""
    spec = tmp_path / "tiny.yaml"
    spec.write_text(TINY_GRID + "sweep: {grid: {update.epochs: [1, 2]}, seeds: [0]}\n")
    env = {**os.environ, "PPO_PLATFORM_HOME": str(platform_home), TRACE_ENV: "1"}
    script = Path(sys.executable).with_name("ppo-platform")
    done = subprocess.run(
        [str(script), "sweep", str(spec), "--workers", "2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert "2 runs, 2 finished, 0 failed" in done.stdout
    marks = _marks(done.stderr)
    assert marks.count("cli: tracking process started early") == 1, marks
    assert marks.count("cli: fork server started early") == 1, marks
    assert marks.count("tracking: serving, importing mlflow") == 1, marks  # workers share it
    assert marks.count("pool worker: ready") == 2, marks
    assert marks.index("cli: fork server started early") < marks.index("sweep: begins")
    # Ended without the teardown, but only once the parent run was closed and acknowledged.
    order = ["sweep: parent closed", "tracking close: exited", "process_exit: os._exit"]
    positions = [marks.index(mark) for mark in order]  # ValueError if one is missing
    assert positions == sorted(positions), marks
    client = MlflowClient(f"sqlite:///{platform_home / 'mlflow.db'}")
    experiments = [experiment.experiment_id for experiment in client.search_experiments()]
    parents = client.search_runs(experiments, filter_string="tags.ppo_platform.kind = 'sweep'")
    assert [run.info.status for run in parents] == ["FINISHED"]
    report = next((platform_home / "runs" / parents[0].info.run_id / "report").glob("*.md"))
    assert "update.epochs" in report.read_text()
