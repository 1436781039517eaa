"""One tiny study (2 trials x 2 seeds), read back: MLflow structure, best spec, summary, plots."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import optuna
import pytest
import yaml
from mlflow.tracking import MlflowClient

from ppo_platform.settings import Settings, get_settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.loader import load_spec
from ppo_platform.training.runner import run_spec
from ppo_platform.tuning import TuneResult, run_study
from ppo_platform.tuning.study import open_storage

pytestmark = pytest.mark.slow


@dataclass
class Finished:
    result: TuneResult
    settings: Settings
    client: MlflowClient
    study: optuna.Study


@pytest.fixture(scope="module")
def finished(
    tmp_path_factory: pytest.TempPathFactory, tiny_spec: Callable[..., ExperimentSpec]
) -> Iterator[Finished]:
    monkeypatch = pytest.MonkeyPatch()
    home = tmp_path_factory.mktemp("tune_outputs")
    monkeypatch.setenv("PPO_PLATFORM_HOME", str(home / "home"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    get_settings.cache_clear()
    settings = get_settings()
    spec = tiny_spec(**{"tune.seeds_per_trial": 2, "tune.aggregate": "mean"})
    result = run_study(spec, study_name="outputs", out_dir=home / "out", live=False)
    storage = open_storage(f"journal:{(settings.home / 'optuna' / 'studies.journal').resolve()}")
    yield Finished(
        result,
        settings,
        MlflowClient(settings.tracking_uri),
        optuna.load_study(study_name="outputs", storage=storage),
    )
    monkeypatch.undo()
    get_settings.cache_clear()


def children(client: MlflowClient, run_id: str) -> list:
    experiment = client.get_run(run_id).info.experiment_id
    return client.search_runs([experiment], filter_string=f"tags.mlflow.parentRunId = '{run_id}'")


def test_study_parent_run_has_one_child_run_per_trial(finished: Finished) -> None:
    trials = children(finished.client, finished.result.parent_run_id)
    assert sorted(r.data.tags["mlflow.runName"] for r in trials) == ["trial-0", "trial-1"]
    assert {r.data.tags["ppo_platform.kind"] for r in trials} == {"trial"}
    parent = finished.client.get_run(finished.result.parent_run_id)
    assert parent.info.status == "FINISHED"
    assert parent.data.tags["ppo_platform.kind"] == "study"


def test_each_trial_run_has_one_training_run_per_seed(finished: Finished) -> None:
    for trial in finished.study.get_trials():
        seeds = children(finished.client, trial.user_attrs["mlflow_run_id"])
        assert sorted(int(r.data.tags["ppo_platform.seed"]) for r in seeds) == [0, 1]
        assert all(r.data.params["budget.total_timesteps"] == "1000" for r in seeds)
        assert all("eval/mean_reward" in r.data.metrics for r in seeds)


def test_trial_run_records_params_value_and_learning_curve(finished: Finished) -> None:
    trial = finished.study.get_trials()[0]
    run = finished.client.get_run(trial.user_attrs["mlflow_run_id"])
    assert float(run.data.params["update.learning_rate.start"]) == pytest.approx(
        trial.params["update.learning_rate.start"]
    )
    assert run.data.metrics["tune/value"] == pytest.approx(trial.value)
    assert run.data.tags["ppo_platform.trial_state"] == "COMPLETE"
    curve = finished.client.get_metric_history(run.info.run_id, "eval/mean_reward")
    assert len(curve) >= 4  # evaluations at 250, 500, 750, 1000 env steps


def test_trial_value_is_the_mean_of_the_seed_values_in_mlflow(finished: Finished) -> None:
    for trial in finished.study.get_trials():
        run_id = trial.user_attrs["mlflow_run_id"]
        per_seed = [
            m.value
            for m in sorted(
                finished.client.get_metric_history(run_id, "tune/seed_value"), key=lambda m: m.step
            )
        ]
        assert per_seed == pytest.approx(trial.user_attrs["seed_values"])
        assert trial.value == pytest.approx(np.mean(per_seed))


def test_best_spec_is_complete_without_tune_section_and_validates(finished: Finished) -> None:
    path = finished.result.outputs.best_spec
    data = yaml.safe_load(path.read_text())
    assert "tune" not in data
    best = finished.study.best_trial
    spec = load_spec(path)
    assert spec.update.learning_rate.start == pytest.approx(
        best.params["update.learning_rate.start"]
    )
    assert spec.budget.total_timesteps == 1000


def test_best_spec_runs_as_is(finished: Finished) -> None:
    result = run_spec(load_spec(finished.result.outputs.best_spec), settings=finished.settings)
    assert result.outcome == "completed"
    assert result.timesteps >= 1000


def test_summary_lists_every_trial_and_the_best_seed_values(finished: Finished) -> None:
    text = finished.result.outputs.summary.read_text()
    best = finished.study.best_trial
    assert f"## Best trial: {best.number}" in text
    assert "| 0 | COMPLETE |" in text and "| 1 | COMPLETE |" in text
    for value in best.user_attrs["seed_values"]:
        assert f"{value:.4g}" in text


def test_parent_run_holds_best_spec_summary_and_plots(finished: Finished) -> None:
    client, run_id = finished.client, finished.result.parent_run_id
    tuning = {Path(a.path).name for a in client.list_artifacts(run_id, "tuning")}
    plots = {Path(a.path).name for a in client.list_artifacts(run_id, "plots")}
    assert tuning == {"best_spec.yaml", "summary.md", "summary.json"}
    assert plots == {"optimization_history.png", "param_importances.png"}
    assert all(p.stat().st_size > 1000 for p in finished.result.outputs.plots)
