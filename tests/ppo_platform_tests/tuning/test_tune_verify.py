"""Held-out verification: the top trials re-run on fresh seeds; the best is chosen by that."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from mlflow.tracking import MlflowClient
from typer.testing import CliRunner

from ppo_platform.cli import EXIT_BAD_INPUT, app
from ppo_platform.settings import Settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.tracking import tags as tag
from ppo_platform.tuning import run_study
from ppo_platform.tuning.verify import spread
from ppo_platform.tuning.verify_report import held_out_best

VERIFIED = """\
name: verify-cli
env: {id: CartPole-v1, n_envs: 2}
rollout: {n_steps: 64}
update: {epochs: 2, minibatch_size: 64}
budget: {total_timesteps: 512, seed: 3}
evaluation: {every_timesteps: 256, episodes: 2}
checkpoints: {every_timesteps: 0}
tune:
  seeds_per_trial: 2
  space:
    update.learning_rate.start: {type: float, low: 1.0e-3, high: 3.0e-3}
  verify: {seeds: [7, 4], top_trials: 2}
"""


def test_held_out_seeds_the_search_uses_are_refused_with_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(VERIFIED)  # the search runs seeds 3 and 4
    result = CliRunner().invoke(app, ["tune", str(path)])
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    assert "tune.verify.seeds" in result.output
    assert "[4]" in result.output and "3 .. 4" in result.output


def test_held_out_episodes_that_would_crawl_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    text = VERIFIED.replace("seeds: [7, 4]", "seeds: [7, 8]").replace(
        "top_trials: 2", "episodes: 500"
    )
    path.write_text(text)  # 3 evaluations x 500 episodes > 512 env steps
    result = CliRunner().invoke(app, ["tune", str(path)])
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    assert "tune.verify.episodes" in result.output and "500" in result.output


def test_spread_states_min_max_and_a_t_interval_of_the_mean() -> None:
    found = spread([400.0, 500.0])
    assert (found["min"], found["max"], found["mean"]) == (400.0, 500.0, 450.0)
    half = 12.706 * float(np.std([400.0, 500.0], ddof=1)) / math.sqrt(2)
    assert found["ci95"] == pytest.approx([450.0 - half, 450.0 + half])
    assert spread([300.0])["ci95"] is None  # one seed: no interval


def test_best_is_the_best_held_out_score_not_the_best_searched() -> None:
    verified: list[dict[str, Any]] = [
        {"number": 4, "searched_value": 500.0, "held_out_value": 190.0},
        {"number": 1, "searched_value": 480.0, "held_out_value": 470.0},
        {"number": 2, "searched_value": 470.0, "held_out_value": None, "error": "diverged"},
    ]
    assert (held_out_best(verified, "maximize") or {}).get("number") == 1
    assert (held_out_best(verified, "minimize") or {}).get("number") == 4
    assert held_out_best(verified[2:], "maximize") is None


@pytest.mark.slow
def test_a_verified_study_chooses_and_reports_by_held_out_score(
    home: Settings, three_trial_spec: Callable[..., ExperimentSpec], tmp_path: Path
) -> None:
    spec = three_trial_spec(**{"tune.verify": {"seeds": [10, 11], "top_trials": 2, "episodes": 3}})
    board = io.StringIO()
    result = run_study(
        spec, study_name="verified", out_dir=tmp_path / "out", live=False, workers=2, progress=board
    )
    summary = json.loads(result.outputs.summary_json.read_text())
    verified = summary["verification"]
    searched = sorted(
        (t for t in summary["trials"] if t["state"] == "COMPLETE"), key=lambda t: -t["value"]
    )
    assert [v["number"] for v in verified] == [t["number"] for t in searched[:2]]
    for entry in verified:
        assert entry["seeds"] == [10, 11] and len(entry["seed_values"]) == 2
        assert entry["held_out_value"] == pytest.approx(np.mean(entry["seed_values"]))
        assert entry["min"] == min(entry["seed_values"]) and entry["max"] == max(
            entry["seed_values"]
        )
        low, high = entry["ci95"]
        assert low <= entry["held_out_value"] <= high
        assert entry["timesteps"] == 2 * 512
    chosen = held_out_best(verified, "maximize")
    assert chosen is not None
    assert summary["best_trial"] == chosen["number"] == result.outputs.best_trial
    assert summary["best_value"] == chosen["held_out_value"]
    assert summary["best_chosen_by"] == "held_out"
    assert summary["env_steps_held_out"] == 2 * 2 * 512
    assert summary["env_steps_total"] == summary["env_steps_search"] + 2 * 2 * 512
    assert summary["env_steps_search"] == sum(t["timesteps"] for t in summary["trials"])
    assert summary["trials_pruned"] == 0
    best_params = next(t for t in summary["trials"] if t["number"] == chosen["number"])["params"]
    best_spec = yaml.safe_load(result.outputs.best_spec.read_text())
    rate = best_spec["update"]["learning_rate"]
    assert (rate["start"] if isinstance(rate, dict) else rate) == pytest.approx(
        best_params["update.learning_rate.start"]
    )
    markdown = result.outputs.summary.read_text()
    assert "## Held-out verification" in markdown and "**chosen**" in markdown
    assert "95% confidence interval of the mean" in markdown
    assert "verifying the top 2 trial(s) on held-out seeds [10, 11]" in board.getvalue()
    assert f"trial {chosen['number']}: searched " in board.getvalue()
    _check_tracking(home, result.parent_run_id, verified)


def _check_tracking(home: Settings, parent_run_id: str, verified: list[dict]) -> None:
    client = MlflowClient(home.tracking_uri)
    history = client.get_metric_history(parent_run_id, "verify/held_out_value")
    found = {m.step: m.value for m in history}
    assert found == {v["number"]: pytest.approx(v["held_out_value"]) for v in verified}
    experiment = client.get_run(parent_run_id).info.experiment_id
    runs = client.search_runs([experiment], filter_string=f"tags.`{tag.KIND}` = 'verify'")
    assert sorted(r.info.run_id for r in runs) == sorted(v["run_id"] for v in verified)
    for run in runs:
        assert run.data.tags[tag.PARENT_RUN_ID] == parent_run_id
        seeds = client.search_runs(
            [experiment], filter_string=f"tags.mlflow.parentRunId = '{run.info.run_id}'"
        )
        assert sorted(s.data.tags[tag.SEED] for s in seeds) == ["10", "11"]
