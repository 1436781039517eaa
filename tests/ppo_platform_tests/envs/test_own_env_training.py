"""A user's own env, in a local module and in an installed package, trains through every
command, named only by --env-package or PPO_PLATFORM_ENV_PACKAGES: `run` with asynchronous
evaluation and subproc envs (spawned processes), `sweep`, and `tune --workers 2`."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from env_package_fixtures import INSTALLED_ENV, INSTALLED_MODULE, LOCAL_ENV, LOCAL_MODULE

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("own_envs_importable")]

TRAIN = """name: own-env
env: {{id: {env}, n_envs: 2, vectorization: subproc}}
rollout: {{n_steps: 32}}
update: {{epochs: 2, minibatch_size: 32}}
budget: {{total_timesteps: 256}}
evaluation: {{every_timesteps: 128, episodes: 2, async: true}}
checkpoints: {{every_timesteps: 0}}
"""
SWEEP = "sweep: {grid: {update.epochs: [1, 2]}, seeds: [0]}\n"
TUNE = """tune:
  n_trials: 2
  sampler: {type: random, seed: 0}
  pruner: {type: none}
  space:
    update.epochs: {type: int, low: 1, high: 3}
"""
FINAL_EVAL = re.compile(r"final eval return (-?[0-9.]+)")


def _cli(args: list[str], home: Path, packages: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PPO_PLATFORM_HOME": str(home), "PPO_PLATFORM_ENV_PACKAGES": packages}
    return subprocess.run(
        [sys.executable, "-m", "ppo_platform.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )


def _spec(tmp_path: Path, env_id: str, extra: str = "") -> str:
    path = tmp_path / "spec.yaml"
    path.write_text(TRAIN.format(env=env_id) + extra)
    return str(path)


def _final_return(output: str) -> float:
    match = FINAL_EVAL.search(output)
    assert match, output
    return float(match.group(1))


def test_a_local_module_named_by_option_trains_with_async_evaluation_and_subproc_envs(
    tmp_path: Path,
) -> None:
    done = _cli(["run", _spec(tmp_path, LOCAL_ENV), "--env-package", LOCAL_MODULE], tmp_path)
    assert done.returncode == 0, done.stderr
    # Corridor: -0.01 per step, +1 at the end; an episode is at most 50 steps.
    assert -0.5 <= _final_return(done.stdout) <= 1.0


def test_an_installed_package_named_by_the_setting_trains_the_same_way(tmp_path: Path) -> None:
    done = _cli(["run", _spec(tmp_path, INSTALLED_ENV)], tmp_path, packages=INSTALLED_MODULE)
    assert done.returncode == 0, done.stderr
    assert -0.4 <= _final_return(done.stdout) <= 1.0


def test_without_the_package_the_same_spec_is_refused_with_the_way_in(tmp_path: Path) -> None:
    done = _cli(["run", _spec(tmp_path, INSTALLED_ENV)], tmp_path)
    assert done.returncode == 2
    assert "is not a registered gymnasium environment" in done.stderr
    assert "--env-package MODULE" in done.stderr


def test_a_sweep_trains_a_local_module_env_in_its_worker_processes(tmp_path: Path) -> None:
    spec = _spec(tmp_path, LOCAL_ENV, SWEEP)
    done = _cli(["sweep", spec, "--workers", "2", "--env-package", LOCAL_MODULE], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 runs, 2 finished, 0 failed" in done.stdout, done.stdout


def test_tune_with_two_workers_trains_an_installed_package_env(tmp_path: Path) -> None:
    spec = _spec(tmp_path, INSTALLED_ENV, TUNE)
    out = tmp_path / "out"
    done = _cli(
        ["tune", spec, "--workers", "2", "--out", str(out)], tmp_path, packages=INSTALLED_MODULE
    )
    assert done.returncode == 0, done.stdout + done.stderr
    value = float(re.search(r"best trial \d+: value (-?[0-9.e+-]+)", done.stdout).group(1))  # type: ignore[union-attr]
    assert math.isfinite(value) and -0.4 <= value <= 1.0
    assert (out / "best_spec.yaml").exists()
