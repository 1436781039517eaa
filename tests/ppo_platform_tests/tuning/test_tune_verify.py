"""Held-out verification: the top trials re-run on fresh seeds; the best is chosen by that."""

from __future__ import annotations

import io
import json
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
from ppo_platform.tuning.verify_report import held_out_best, verification_markdown

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


def test_spread_gives_bootstrap_intervals_inside_the_observed_range() -> None:
    found = spread([500.0, 500.0, 300.0, 120.0, 500.0])
    assert (found["min"], found["max"], found["mean"]) == (120.0, 500.0, 384.0)
    for key in ("ci95", "iqm_ci95"):
        low, high = found[key]
        assert 120.0 <= low < high <= 500.0  # a t interval here would reach above 500
    assert found["iqm"] == pytest.approx(np.mean([300.0, 500.0, 500.0]))
    assert found["solved"] is None
    assert spread([300.0])["ci95"] is None  # one seed: no interval


def test_spread_with_a_threshold_gives_the_exact_solve_rate() -> None:
    solved = spread([500.0, 476.0, 474.9, 500.0], threshold=475.0)["solved"]
    assert (solved["solved"], solved["runs"], solved["rate"]) == (3, 4, 0.75)
    assert solved["ci95"] == pytest.approx([0.1941, 0.9937], abs=1e-4)  # Clopper-Pearson


def test_best_is_the_best_held_out_score_not_the_best_searched() -> None:
    verified: list[dict[str, Any]] = [
        {"number": 4, "searched_value": 500.0, "held_out_value": 190.0},
        {"number": 1, "searched_value": 480.0, "held_out_value": 470.0},
        {"number": 2, "searched_value": 470.0, "held_out_value": None, "error": "diverged"},
    ]
    assert (held_out_best(verified, "maximize") or {}).get("number") == 1
    assert (held_out_best(verified, "minimize") or {}).get("number") == 4
    assert held_out_best(verified[2:], "maximize") is None


def _verified(number: int, values: list[float], threshold: float | None) -> dict[str, Any]:
    held_out = float(np.mean(values))
    entry = {"number": number, "searched_value": 500.0, "held_out_value": held_out}
    return entry | {"seed_values": values} | spread(values, threshold)


def test_the_winner_is_the_highest_lower_bound_not_the_highest_rate() -> None:
    few = _verified(3, [500.0] * 3, 475.0)  # 3/3: 100%, but the interval reaches down to 29%
    many = _verified(5, [500.0] * 9 + [200.0], 475.0)  # 9/10: 90%, lower bound 55%
    assert (held_out_best([few, many], "maximize") or {}).get("number") == 5
    # No threshold: the bootstrap bound of the mean; mean 400 with one bad seed loses to 390.
    without = [_verified(3, [500.0, 500.0, 500.0, 100.0], None)]
    without.append(_verified(5, [380.0, 385.0, 390.0, 395.0, 400.0], None))
    assert without[0]["mean"] > without[1]["mean"]
    assert (held_out_best(without, "maximize") or {}).get("number") == 5


def test_the_summary_says_plainly_when_the_top_trials_cannot_be_told_apart() -> None:
    top = [_verified(2, [500.0, 500.0, 500.0], 475.0), _verified(7, [500.0, 480.0, 150.0], 475.0)]
    text = "\n".join(verification_markdown(top, [100, 101, 102], 2, 475.0))
    assert "| 2 | 500 | 500 | 500, 500, 500 | 500 | 500 | 500 [500, 500] |" in text
    assert "3/3 (29%-100%)" in text and "2/3 (9%-99%)" in text
    assert "Trials 2 and 7 **cannot be told apart**" in text
    assert "Predicted solve rate on fresh seeds: **100%, 95% CI 29%-100%**" in text
    assert "only 3 seeds" in text  # fewer than 5: said next to the numbers
    clear = [_verified(1, [500.0] * 8, None), _verified(4, [100.0 + i for i in range(8)], None)]
    text = "\n".join(verification_markdown(clear, list(range(8)), 1))
    assert "Trial 1 is **better** than trial 4" in text and "cannot be told" not in text
    assert "held-out mean: 500 [500, 500] over 8 held-out seed(s)" in text


def test_a_solve_threshold_on_a_minimized_score_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    text = VERIFIED.replace("seeds: [7, 4]", "seeds: [7, 8], solve_threshold: 475")
    path.write_text(text.replace("seeds_per_trial: 2", "seeds_per_trial: 2\n  direction: minimize"))
    result = CliRunner().invoke(app, ["tune", str(path)])
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    assert "tune.verify.solve_threshold" in result.output and "minimizes" in result.output
    path.write_text(text.replace("475", ".inf"))
    result = CliRunner().invoke(app, ["tune", str(path)])
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    assert "solve_threshold" in result.output


@pytest.mark.slow
def test_a_verified_study_chooses_and_reports_by_held_out_score(
    home: Settings, three_trial_spec: Callable[..., ExperimentSpec], tmp_path: Path
) -> None:
    verify = {"seeds": [10, 11], "top_trials": 2, "episodes": 3, "solve_threshold": 0.0}
    spec = three_trial_spec(**{"tune.verify": verify})  # every seed "solves" a threshold of 0
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
        assert entry["solved"]["solved"] == entry["solved"]["runs"] == 2
        assert entry["solved"]["ci95"] == pytest.approx([0.1581, 1.0], abs=1e-4)
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
    assert "percentile-bootstrap 95% intervals" in markdown and "**Chosen: trial" in markdown
    assert "Predicted solve rate on fresh seeds: **100%, 95% CI 16%-100%**" in markdown
    assert "**cannot be told apart**" in markdown  # 2 seeds against 2: no verdict possible
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


@pytest.mark.slow
def test_on_the_compiled_path_a_trials_held_out_seeds_train_together(
    home: Settings, tiny_spec: Callable[..., ExperimentSpec], tmp_path: Path
) -> None:
    verify = {"seeds": [10, 11, 12], "top_trials": 1, "episodes": 2}
    changes = {"budget.total_timesteps": 512, "evaluation.every_timesteps": 256}
    spec = tiny_spec(**changes, **{"tune.verify": verify, "compiled": "on"})
    result = run_study(spec, study_name="compiled", out_dir=tmp_path / "out", live=False)
    verified = json.loads(result.outputs.summary_json.read_text())["verification"]
    assert len(verified) == 1 and "error" not in verified[0]
    entry = verified[0]
    assert entry["seeds"] == [10, 11, 12] and len(entry["seed_values"]) == 3
    assert entry["held_out_value"] == pytest.approx(np.mean(entry["seed_values"]))
    assert entry["timesteps"] == 3 * 512
    client = MlflowClient(home.tracking_uri)
    experiment = client.get_run(entry["run_id"]).info.experiment_id
    seeds = client.search_runs(
        [experiment], filter_string=f"tags.mlflow.parentRunId = '{entry['run_id']}'"
    )
    assert sorted(s.data.tags[tag.SEED] for s in seeds) == ["10", "11", "12"]
    assert {s.data.tags[tag.TRAINING_PATH] for s in seeds} == {"compiled"}
    assert all(s.data.tags[tag.KIND] == "seed" for s in seeds)
    by_seed = {int(s.data.tags[tag.SEED]): s for s in seeds}
    for value, seed in zip(entry["seed_values"], [10, 11, 12], strict=True):
        assert by_seed[seed].data.params["budget.seed"] == str(seed)
        assert value == pytest.approx(by_seed[seed].data.metrics["eval/mean_reward"])
    # One batch: every seed's run was open before any of them closed.
    assert max(s.info.start_time for s in seeds) < min(s.info.end_time for s in seeds)
