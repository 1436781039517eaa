"""benchmarks.learning.lm_grpo_tries: every try is a spec the CLI accepts, and a try's run is
scored from its MLflow run (a tiny budget here; the script runs the full ones)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient
from typer.testing import CliRunner

from benchmarks.learning.lm_grpo_tries import SPEC, TRIES, final_accuracy, run_command
from ppo_platform.cli import app

TINY = (
    "budget.updates=1",
    "evaluation.every_updates=0",
    "evaluation.max_prompts=8",
    "update.minibatch_size=8",
    "update.epochs=1",
)


@pytest.fixture(scope="module")
def demo_home(shared_home: Path) -> Path:
    result = CliRunner().invoke(app, ["lm", "init-demo", "--sft-steps", "5"])
    assert result.exit_code == 0, result.output
    return shared_home


@pytest.mark.parametrize("index", range(len(TRIES)))
def test_each_try_validates_as_grpo_on_seed_0(demo_home, index):
    sets = run_command(TRIES[index][1], f"grpo-try-{index}")[4:]
    result = CliRunner().invoke(app, ["validate", str(SPEC), *sets])
    assert result.exit_code == 0, result.output
    assert sets[:2] == ["--set", "advantage.estimator=grpo"] and "budget.seed=0" in sets


def test_a_try_is_scored_by_its_final_held_out_accuracy(demo_home):
    env = {**os.environ, "PPO_PLATFORM_HOME": str(demo_home), "HF_HUB_OFFLINE": "1"}
    command = run_command((*TRIES[3][1], *TINY), "grpo-try-tiny")
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    client = MlflowClient(f"sqlite:///{(demo_home / 'mlflow.db').resolve()}")
    scored = final_accuracy(client, "grpo-try-tiny")
    assert scored["status"] == "FINISHED" and scored["updates"] == 1
    assert 0.0 <= scored["final_accuracy"] <= 1.0
    (run,) = client.search_runs([client.get_experiment_by_name("grpo-try-tiny").experiment_id])
    assert run.data.params["advantage.group_size"] == "4"
    assert run.data.params["lm.prompts_per_update"] == "32"
