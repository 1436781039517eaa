"""`ppo-platform run` through CliRunner and as a real process (progress, exit codes, Ctrl-C)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient
from typer.testing import CliRunner

from ppo_platform.cli import app
from ppo_platform.settings import get_settings

TINY = """\
name: cli-tiny
env: {id: CartPole-v1, n_envs: 4}
rollout: {n_steps: 64}
update: {epochs: 4, minibatch_size: 64, learning_rate: 3.0e-4}
budget: {total_timesteps: 1024, seed: 0}
evaluation: {every_timesteps: 512, episodes: 2}
"""


@pytest.fixture
def tiny_spec(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY)
    return path


def test_run_trains_and_prints_summary(platform_home: Path, tiny_spec: Path) -> None:
    result = CliRunner().invoke(app, ["run", str(tiny_spec)])
    assert result.exit_code == 0, result.output
    assert "completed: run" in result.output
    assert "1024 env steps" in result.output
    run_id = result.output.split("completed: run ")[1].split(",")[0]
    assert MlflowClient(get_settings().tracking_uri).get_run(run_id).info.status == "FINISHED"


def test_run_applies_overrides_through_validation(platform_home: Path, tiny_spec: Path) -> None:
    result = CliRunner().invoke(app, ["run", str(tiny_spec), "--set", "update.epochs=31"])
    assert result.exit_code == 2
    assert "update.epochs = 31" in result.output and "refused" in result.output
    assert not (platform_home / "runs").exists()


def test_run_needs_exactly_one_of_spec_or_resume(platform_home: Path, tiny_spec: Path) -> None:
    neither = CliRunner().invoke(app, ["run"])
    both = CliRunner().invoke(app, ["run", str(tiny_spec), "--resume", "abc"])
    assert neither.exit_code == both.exit_code == 2
    assert "exactly one" in neither.output


def test_resume_of_unknown_run_is_a_clear_error(platform_home: Path) -> None:
    result = CliRunner().invoke(app, ["run", "--resume", "0123abcd" * 4])
    assert result.exit_code == 2
    assert f"no run folder for run '{'0123abcd' * 4}'" in result.output


def _cli(*args: str, env: dict[str, str]) -> list[str]:
    return [sys.executable, "-m", "ppo_platform.cli", *args]


def test_run_as_a_process_prints_plain_progress_without_a_terminal(
    platform_home: Path, tiny_spec: Path
) -> None:
    env = {**os.environ, "PPO_PLATFORM_HOME": str(platform_home)}
    done = subprocess.run(
        _cli("run", str(tiny_spec), env=env), env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "eval  step 512: mean return" in done.stdout
    assert "completed: run" in done.stdout
    assert "\x1b[" not in done.stdout  # no terminal escape codes in logs


@pytest.mark.slow
def test_ctrl_c_saves_a_checkpoint_marks_run_killed_and_exits_130(
    platform_home: Path, tiny_spec: Path
) -> None:
    env = {**os.environ, "PPO_PLATFORM_HOME": str(platform_home)}
    long_run = [
        "--set",
        "budget.total_timesteps=1000000",
        "--set",
        "evaluation.every_timesteps=2048",
    ]
    process = subprocess.Popen(
        _cli("run", str(tiny_spec), *long_run, env=env),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    deadline = time.monotonic() + 240
    for line in process.stdout:  # wait until training is really under way
        if line.startswith("eval  step") or time.monotonic() > deadline:
            break
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "interrupted: checkpoint saved, run marked KILLED" in stderr
    client = MlflowClient(f"sqlite:///{(platform_home / 'mlflow.db').resolve()}")
    [run] = client.search_runs([client.get_experiment_by_name("cli-tiny").experiment_id])
    assert run.info.status == "KILLED"
    assert run.data.tags["ppo_platform.outcome"] == "cancelled"
    assert list((platform_home / "runs" / run.info.run_id / "checkpoints").glob("step_*.zip"))
