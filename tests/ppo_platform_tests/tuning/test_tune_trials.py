"""Trials end to end (tiny CartPole runs): aggregation, pruning, and trials that are not scored."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from mlflow.tracking import MlflowClient
from optuna.trial import TrialState

from ppo_platform.settings import Settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.tuning import run_study
from ppo_platform.tuning.study import open_storage, prepare_study

Factory = Callable[..., ExperimentSpec]
pytestmark = pytest.mark.slow


def study_trials(home: Settings, name: str):
    storage = open_storage(f"journal:{(home.home / 'optuna' / 'studies.journal').resolve()}")
    import optuna

    return optuna.load_study(study_name=name, storage=storage).get_trials()


def seed_runs(home: Settings, trial_run_id: str):
    client = MlflowClient(home.tracking_uri)
    return client.search_runs(
        [client.get_run(trial_run_id).info.experiment_id],
        filter_string=f"tags.mlflow.parentRunId = '{trial_run_id}'",
    )


def run_enqueued(spec: ExperimentSpec, tmp_path: Path, name: str, *params: dict):
    """Run study `name` on its own journal with `params` queued as its first trials."""
    storage_url = f"journal:{tmp_path / f'{name}.journal'}"
    study = prepare_study(spec, open_storage(storage_url), name)
    for trial_params in params:
        study.enqueue_trial(trial_params)
    run_study(spec, storage=storage_url, study_name=name, out_dir=tmp_path / "out", live=False)
    return study


def test_trial_value_is_the_quantile_of_its_seed_values(
    home: Settings, tiny_spec: Factory, tmp_path: Path
) -> None:
    spec = tiny_spec(
        **{
            "tune.n_trials": 1,
            "tune.seeds_per_trial": 3,
            "tune.aggregate": "quantile",
            "tune.quantile": 0.25,
        }
    )
    run_study(spec, study_name="quantile", out_dir=tmp_path / "out", live=False)
    (trial,) = study_trials(home, "quantile")
    runs = seed_runs(home, trial.user_attrs["mlflow_run_id"])
    per_seed = {
        int(r.data.tags["ppo_platform.seed"]): float(
            r.data.tags["ppo_platform.final_eval_mean_reward"]
        )
        for r in runs
    }
    assert sorted(per_seed) == [0, 1, 2]
    assert trial.user_attrs["seed_values"] == pytest.approx(
        [per_seed[s] for s in (0, 1, 2)], abs=1e-4
    )
    assert trial.value == pytest.approx(np.quantile(list(per_seed.values()), 0.25), abs=1e-4)


def test_pruned_trial_stops_before_its_budget(
    home: Settings, tiny_spec: Factory, tmp_path: Path
) -> None:
    # Trial 1 caps CartPole episodes at 5 steps, so its eval return (<= 5) is surely below
    # trial 0's at the first evaluation: the median pruner must stop it there.
    spec = tiny_spec(
        **{
            "tune.n_trials": 2,
            "tune.sampler.type": "random",
            "tune.pruner": {"type": "median", "n_startup_trials": 1, "n_warmup_evaluations": 0},
            "tune.space": {
                "env.kwargs.max_episode_steps": {"type": "categorical", "choices": [500, 5]}
            },
        }
    )
    study = run_enqueued(
        spec,
        tmp_path,
        "prune",
        {"env.kwargs.max_episode_steps": 500},
        {"env.kwargs.max_episode_steps": 5},
    )
    first, second = study.get_trials()
    assert first.state == TrialState.COMPLETE
    assert first.user_attrs["timesteps"] >= 1000
    assert second.state == TrialState.PRUNED
    assert second.user_attrs["timesteps"] < second.user_attrs["budget_timesteps"] == 1000
    (seed_run,) = seed_runs(home, second.user_attrs["mlflow_run_id"])
    assert seed_run.data.tags["ppo_platform.outcome"] == "cancelled"


def test_invalid_sampled_combination_fails_without_training(
    home: Settings, tiny_spec: Factory, tmp_path: Path
) -> None:
    spec = tiny_spec(
        **{
            "tune.n_trials": 2,
            "tune.space": {"update.minibatch_size": {"type": "categorical", "choices": [64, 512]}},
        }
    )
    study = run_enqueued(
        spec,
        tmp_path,
        "invalid",
        {"update.minibatch_size": 512},  # > 2 envs x 64 steps = 128
        {"update.minibatch_size": 64},
    )
    failed, completed = study.get_trials()
    assert failed.state == TrialState.FAIL
    assert failed.value is None
    assert "update.minibatch_size" in failed.user_attrs["failure"]
    assert failed.user_attrs["timesteps"] == 0
    assert completed.state == TrialState.COMPLETE


def test_drift_stop_fails_the_trial_with_the_alert_as_reason(
    home: Settings, tiny_spec: Factory, tmp_path: Path
) -> None:
    # Any update with approx KL above 1e-4 is a critical alert, and on_alert: stop ends the run.
    spec = tiny_spec(
        **{
            "tune.n_trials": 1,
            "diagnostics.on_alert": "stop",
            "diagnostics.kl_healthy_max": 1e-4,
            "diagnostics.kl_alert": 1e-4,
        }
    )
    from ppo_platform.tuning import TuningError

    with pytest.raises(TuningError, match="no completed trial"):
        run_study(spec, study_name="drift", out_dir=tmp_path / "out", live=False)
    (trial,) = study_trials(home, "drift")
    assert trial.state == TrialState.FAIL
    assert trial.user_attrs["failure"].startswith("stopped by a diagnostics alert")
    client = MlflowClient(home.tracking_uri)
    trial_run = client.get_run(trial.user_attrs["mlflow_run_id"])
    assert trial_run.info.status == "FAILED"
    assert trial_run.data.tags["ppo_platform.trial_state"] == "FAIL"
    assert "tune/value" not in trial_run.data.metrics
