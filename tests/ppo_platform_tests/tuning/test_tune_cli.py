"""`ppo-platform tune` through Typer's CliRunner: refusals (exit 2) and --space auto."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from ppo_platform.cli import EXIT_BAD_INPUT, app
from ppo_platform.settings import Settings
from ppo_platform.spec.loader import load_spec

NO_TUNE = """\
name: cli-tune
env: {id: CartPole-v1, n_envs: 2}
rollout: {n_steps: 64}
update: {epochs: 2, minibatch_size: 64}
budget: {total_timesteps: 1000}
evaluation: {every_timesteps: 500, episodes: 2}
checkpoints: {every_timesteps: 0}
"""


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str], Path]:
    def write_text(text: str) -> Path:
        path = tmp_path / "spec.yaml"
        path.write_text(text)
        return path

    return write_text


def test_unsafe_space_is_refused_with_exit_2(write: Callable[[str], Path]) -> None:
    spec = write(NO_TUNE + "tune:\n  space:\n    update.epochs: {type: int, low: 1, high: 40}\n")
    result = CliRunner().invoke(app, ["tune", str(spec)])
    assert result.exit_code == EXIT_BAD_INPUT
    assert "tune.space.update.epochs.high = 40" in result.output
    assert result.output.startswith("refused")


def test_a_space_that_can_sample_a_rollout_past_the_budget_is_refused_before_any_trial(
    home: Settings, write: Callable[[str], Path], tmp_path: Path
) -> None:
    # Each value alone fits the 1000-step budget (4 x 64 and 2 x 256); together 4 x 256 do not.
    space = (
        "    env.n_envs: {type: categorical, choices: [2, 4]}\n"
        "    rollout.n_steps: {type: categorical, choices: [64, 256]}\n"
    )
    spec = write(NO_TUNE + "tune:\n  n_trials: 4\n  pruner: {type: none}\n  space:\n" + space)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["tune", str(spec), "--out", str(out)])
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    said = " ".join(result.output.split())
    assert "tune.space = 1024" in said, said
    assert "env.n_envs x rollout.n_steps = 4 x 256 = 1024 env steps" in said
    assert "budget.total_timesteps = 1000" in said
    assert "lower the highest env.n_envs it samples or the highest rollout.n_steps" in said
    # Before any trial: no study output, no MLflow store, no run folder.
    assert not out.exists() and not (home.home / "mlflow.db").exists()
    assert not home.runs_dir.exists() or not any(home.runs_dir.iterdir())


def test_spec_without_tune_section_needs_space_auto(write: Callable[[str], Path]) -> None:
    result = CliRunner().invoke(app, ["tune", str(write(NO_TUNE))])
    assert result.exit_code == EXIT_BAD_INPUT
    assert "--space auto" in result.output


def test_unknown_space_option_is_bad_input(write: Callable[[str], Path]) -> None:
    result = CliRunner().invoke(app, ["tune", str(write(NO_TUNE)), "--space", "wide"])
    assert result.exit_code == EXIT_BAD_INPUT


@pytest.mark.slow
def test_space_auto_tunes_a_spec_and_writes_a_runnable_best_spec(
    home: Settings, write: Callable[[str], Path], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            "tune",
            str(write(NO_TUNE)),
            "--space",
            "auto",
            "--set",
            "tune.n_trials=1",
            "--set",
            "tune.pruner.type=none",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert f"wrote {out / 'best_spec.yaml'}" in result.output
    best = load_spec(out / "best_spec.yaml")
    assert 1 <= best.update.epochs <= 4  # the auto range around K = 2: [max(1, K // 2), 2K]
    assert "tune" not in yaml.safe_load((out / "best_spec.yaml").read_text())
