"""`ppo-platform plan` end to end: CliRunner, real subprocesses, imports, one training run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ppo_platform.cli import EXIT_BAD_INPUT, EXIT_OK, app
from ppo_platform.planner import plan_experiment
from ppo_platform.settings import get_settings
from ppo_platform.spec.loader import load_spec

runner = CliRunner()
CLI = [sys.executable, "-m", "ppo_platform.cli"]


@pytest.fixture
def platform_home(tmp_path, monkeypatch):
    """A throwaway PPO_PLATFORM_HOME (MLflow store, run folders) for one test."""
    home = tmp_path / "home"
    monkeypatch.chdir(tmp_path)  # MLflow puts artifacts in ./mlruns by default: not in the repo
    monkeypatch.setenv("PPO_PLATFORM_HOME", str(home))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    get_settings.cache_clear()
    yield home
    get_settings.cache_clear()


def plan_args(out: Path, *extra: str) -> list[str]:
    return ["plan", "--env", "CartPole-v1", "--budget", "100000", "--out", str(out), *extra]


def test_plan_writes_the_spec_and_the_markdown(tmp_path):
    result = runner.invoke(app, plan_args(tmp_path))
    assert result.exit_code == EXIT_OK, result.output
    assert (tmp_path / "spec.yaml").is_file()
    assert (tmp_path / "skill-ppo-trainer.md").read_text().startswith("---\nname: ppo-trainer\n")
    assert f"wrote {tmp_path / 'spec.yaml'}" in result.stdout


def test_plan_prints_the_planned_numbers(tmp_path):
    result = runner.invoke(app, plan_args(tmp_path))
    assert result.stdout.splitlines()[0] == (
        "planned CartPole-v1 (classic-control) for 100,000 env steps: N=8 x T=32 (391 updates), "
        "K=20, minibatch 256, LR 1e-3 linear, eps 0.2, gamma 0.98, lambda 0.8"
    )


def test_plan_writes_into_outputs_by_default(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["plan", "--env", "CartPole-v1", "--budget", "100000"])
    assert result.exit_code == EXIT_OK, result.output
    assert sorted(p.name for p in (tmp_path / "outputs").iterdir()) == [
        "skill-ppo-trainer.md",
        "spec.yaml",
    ]


def test_planned_spec_passes_validate(tmp_path):
    runner.invoke(app, plan_args(tmp_path))
    result = runner.invoke(app, ["validate", str(tmp_path / "spec.yaml")])
    assert result.exit_code == EXIT_OK, result.output
    assert "valid ppo spec 'cartpole-v1-ppo'" in result.stdout


def test_plan_applies_set_overrides(tmp_path):
    result = runner.invoke(app, plan_args(tmp_path, "--set", "budget.seed=2"))
    assert result.exit_code == EXIT_OK, result.output
    assert load_spec(tmp_path / "spec.yaml").budget.seed == 2


def test_plan_unknown_env_exits_2_with_close_matches(tmp_path):
    result = runner.invoke(
        app, ["plan", "--env", "CartPol-v1", "--budget", "100000", "--out", str(tmp_path)]
    )
    assert result.exit_code == EXIT_BAD_INPUT
    assert result.stderr.startswith("error: plan: env.id = 'CartPol-v1': is not a registered")
    assert "did you mean CartPole-v1" in result.stderr
    assert not (tmp_path / "spec.yaml").exists()


def test_plan_refused_override_exits_2_with_the_refusal(tmp_path):
    result = runner.invoke(app, plan_args(tmp_path, "--set", "update.epochs=31"))
    assert result.exit_code == EXIT_BAD_INPUT
    assert result.stderr.startswith("refused: --set: update.epochs = 31: refused: K = 31 epochs")


def test_plan_too_small_budget_exits_2_naming_the_minimum(tmp_path):
    result = runner.invoke(
        app, ["plan", "--env", "CartPole-v1", "--budget", "100", "--out", str(tmp_path)]
    )
    assert result.exit_code == EXIT_BAD_INPUT
    assert "needs at least 1,280 env steps" in result.stderr


def test_plan_unknown_use_case_exits_2(tmp_path):
    result = runner.invoke(app, plan_args(tmp_path, "--use-case", "robotics"))
    assert result.exit_code == EXIT_BAD_INPUT
    assert "use_case = 'robotics': is not a known use case." in result.stderr


def test_plan_into_an_unwritable_folder_exits_2(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = runner.invoke(app, plan_args(blocker))
    assert result.exit_code == EXIT_BAD_INPUT
    assert "out = " in result.stderr and "cannot write the plan" in result.stderr


def test_plan_warns_on_stderr_when_the_budget_buys_few_updates(tmp_path):
    result = runner.invoke(
        app, ["plan", "--env", "CartPole-v1", "--budget", "5000", "--out", str(tmp_path)]
    )
    assert result.exit_code == EXIT_OK, result.output
    assert result.stderr.startswith("warning: the budget buys only 40 updates")


def test_plan_rlhf_on_an_env_exits_2_naming_the_model_dir_way(tmp_path):
    result = runner.invoke(app, plan_args(tmp_path, "--use-case", "rlhf"))
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    assert "--model-dir DIR --prompts FILE.jsonl" in result.stderr
    assert not (tmp_path / "spec.yaml").exists()


def test_plan_without_env_or_model_dir_exits_2_naming_env(tmp_path):
    result = runner.invoke(app, ["plan", "--budget", "1000", "--out", str(tmp_path)])
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    assert "--env" in result.stderr and "is required" in result.stderr


def test_plan_subprocess_writes_files_and_exits_0(tmp_path):
    done = subprocess.run([*CLI, *plan_args(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == EXIT_OK, done.stderr
    assert (tmp_path / "spec.yaml").is_file()
    assert (tmp_path / "skill-ppo-trainer.md").is_file()


def test_plan_subprocess_unknown_env_exits_2_with_the_message(tmp_path):
    done = subprocess.run(
        [*CLI, "plan", "--env", "NoSuchEnv-v0", "--budget", "100000", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == EXIT_BAD_INPUT
    assert "env.id = 'NoSuchEnv-v0': is not a registered gymnasium environment." in done.stderr


def test_plan_imports_no_torch_sb3_or_mlflow(tmp_path):
    probe = (
        "import sys\n"
        "from ppo_platform.cli import app\n"
        f"try:\n    app({plan_args(tmp_path)!r})\nexcept SystemExit as exit:\n"
        "    assert exit.code in (0, None), exit.code\n"
        "heavy = ('torch', 'stable_baselines3', 'mlflow', 'optuna')\n"
        "print(sorted(name for name in heavy if name in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
    assert (tmp_path / "spec.yaml").is_file()


@pytest.mark.slow
def test_planned_cartpole_spec_trains_through_run_spec(platform_home):
    from ppo_platform.training.runner import run_spec

    spec = plan_experiment("CartPole-v1", 100_000, overrides=["budget.total_timesteps=3000"]).spec
    result = run_spec(spec)
    assert result.outcome == "completed"
    assert result.timesteps >= 3000
    assert result.final_eval_mean is not None and result.final_eval_mean > 0
