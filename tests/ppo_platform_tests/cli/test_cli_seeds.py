"""`ppo-platform run` with `--seeds` or a spec's `budget.seeds`: a batch under one parent run;
bad seeds exit 2 naming the flag (or field), the value and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient
from typer.testing import CliRunner

from ppo_platform.cli import app
from ppo_platform.settings import get_settings
from ppo_platform.tracking import tags as tag

BATCH = """\
name: cli-batch
env: {id: CartPole-v1, n_envs: 2}
rollout: {n_steps: 32}
update: {epochs: 2, minibatch_size: 64}
budget: {total_timesteps: 128, seeds: [5, 2]}
evaluation: {every_timesteps: 0, episodes: 1}
checkpoints: {every_timesteps: 0}
"""


@pytest.fixture
def batch_spec(tmp_path: Path) -> Path:
    path = tmp_path / "batch.yaml"
    path.write_text(BATCH)
    return path


@pytest.mark.parametrize(
    ("text", "says"),
    [("5-2", "runs backwards"), ("", "names no seed"), ("0,0", "more than once"), ("-1", "seed")],
)
def test_bad_seeds_exit_2_naming_the_flag_the_value_and_the_fix(
    platform_home: Path, batch_spec: Path, text: str, says: str
) -> None:
    result = CliRunner().invoke(app, ["run", str(batch_spec), "--seeds", text])
    assert result.exit_code == 2, result.output
    assert "--seeds" in result.output and says in result.output and "0-15" in result.output
    assert not (platform_home / "runs").exists()


def test_seeds_do_not_resume(platform_home: Path) -> None:
    result = CliRunner().invoke(app, ["run", "--resume", "ab" * 16, "--seeds", "0-1"])
    assert result.exit_code == 2 and "does not resume a run" in result.output


def test_a_spec_with_budget_seeds_trains_each_seed_under_one_parent(
    platform_home: Path, batch_spec: Path
) -> None:
    result = CliRunner().invoke(app, ["run", str(batch_spec)])
    assert result.exit_code == 0, result.output
    assert "2 of 2 seeds ended (torch path)" in result.output
    client = MlflowClient(get_settings().tracking_uri)
    experiment = client.get_experiment_by_name("cli-batch")
    runs = client.search_runs([experiment.experiment_id])
    [parent] = [r for r in runs if r.data.tags.get(tag.KIND) == "seeds"]
    children = [r for r in runs if r.data.tags.get(tag.PARENT_RUN_ID) == parent.info.run_id]
    assert sorted(r.data.params["budget.seed"] for r in children) == ["2", "5"]
    assert parent.data.tags[tag.SWEEP_SEEDS] == "[5, 2]"
    # --seeds replaces the spec's seeds
    again = CliRunner().invoke(app, ["run", str(batch_spec), "--seeds", "7"])
    assert again.exit_code == 0 and "1 of 1 seeds ended" in again.output
    assert "seed 7:" in again.output
