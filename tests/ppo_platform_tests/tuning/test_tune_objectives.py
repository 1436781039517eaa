"""Objectives people tune for: final return, env steps to a threshold, the area under the
eval curve, and return and steps at once (a Pareto front); and the refusals of combinations
that contradict each other."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import optuna
import pytest
from mlflow.tracking import MlflowClient

from ppo_platform.doctor import CAUSES
from ppo_platform.errors import SpecError
from ppo_platform.settings import Settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.tuning import run_study
from ppo_platform.tuning.scoring import SeedCurve, aggregate, seed_scores
from ppo_platform.tuning.study import open_storage
from tests.ppo_platform_tests.tuning.conftest import make_spec

STEPS = {"type": "steps_to_threshold", "threshold": 20.0}


def test_steps_to_threshold_is_the_first_eval_reaching_it_else_budget_plus_penalty() -> None:
    curve = SeedCurve(by_step={250: 12.0, 500: 30.0, 750: 18.0, 1000: 40.0})
    spec = make_spec(**{"tune.objective": STEPS})
    assert spec.tune is not None
    assert seed_scores(spec.tune, 40.0, curve, 1000) == [500.0]
    never = SeedCurve(by_step={500: 9.0, 1000: 11.0})
    assert seed_scores(spec.tune, 11.0, never, 1000) == [2000.0]  # default penalty: the budget
    spec = make_spec(**{"tune.objective": {**STEPS, "penalty": 100}})
    assert spec.tune is not None
    assert seed_scores(spec.tune, 11.0, never, 1000) == [1100.0]


def test_eval_auc_is_the_trapezoid_area_over_the_steps_it_spans() -> None:
    curve = SeedCurve(by_step={1000: 10.0, 2000: 30.0, 4000: 30.0})
    spec = make_spec(**{"tune.objective": {"type": "eval_auc"}})
    assert spec.tune is not None
    # (10 + 30) / 2 * 1000 + 30 * 2000 = 80000 over 3000 steps
    assert seed_scores(spec.tune, 30.0, curve, 4000) == [pytest.approx(80000 / 3000)]


def test_a_pessimistic_quantile_takes_the_worst_seed_in_either_direction() -> None:
    spec = make_spec(**{"tune.aggregate": "quantile", "tune.quantile": 0.0})
    assert spec.tune is not None
    assert aggregate([300.0, 500.0], spec.tune, "maximize") == 300.0
    assert aggregate([3000.0, 5000.0], spec.tune, "minimize") == 5000.0  # most steps


@pytest.mark.parametrize(
    ("changes", "field", "fix"),
    [
        ({"tune.objective": STEPS, "tune.direction": "maximize"}, "tune.direction", "remove"),
        ({"tune.objective": STEPS, "tune.metric": "eval_auc"}, "tune.metric", "remove"),
        (
            {"tune.objective": STEPS, "evaluation.every_timesteps": 0},
            "evaluation.every_timesteps",
            "every_timesteps",
        ),
        (
            {"tune.seeds_per_trial": 2, "tune.racing": {"seeds_max": 2}},
            "tune.racing.seeds_max",
            "above",
        ),
        (
            {
                "tune.objective": {**STEPS, "type": "return_and_steps"},
                "tune.racing": {"seeds_max": 2},
            },
            "tune.racing",
            "single objective",
        ),
        (
            {
                "tune.objective": {**STEPS, "type": "return_and_steps"},
                "tune.verify": {"seeds": [9]},
            },
            "tune.verify",
            "single objective",
        ),
        ({"tune.objective": {"type": "steps_to_threshold"}}, "tune.objective", "threshold"),
        (
            {"tune.objective": {"type": "final_return", "threshold": 5.0}},
            "tune.objective",
            "remove",
        ),
    ],
)
def test_contradicting_tune_fields_are_refused_naming_field_and_fix(
    changes: dict, field: str, fix: str
) -> None:
    with pytest.raises(SpecError) as raised:
        make_spec(**changes)
    text = raised.value.render()
    assert field in text and fix in text


def test_racing_seeds_count_against_held_out_seeds() -> None:
    with pytest.raises(SpecError) as raised:
        make_spec(**{"tune.racing": {"seeds_max": 3}, "tune.verify": {"seeds": [2, 9]}})
    assert "tune.verify.seeds" in raised.value.render()


@pytest.mark.slow
def test_a_steps_study_minimizes_and_feeds_the_pruner_negated_returns(
    home: Settings, tmp_path: Path
) -> None:
    spec = make_spec(
        **{
            "tune.objective": {**STEPS, "penalty": 0},
            "tune.n_trials": 3,
            "tune.pruner": {"type": "median", "n_startup_trials": 1, "n_warmup_evaluations": 1},
        }
    )
    result = run_study(spec, study_name="steps", out_dir=tmp_path / "out", live=False)
    study = optuna.load_study(study_name="steps", storage=open_storage(home.optuna_storage))
    assert study.direction == optuna.study.StudyDirection.MINIMIZE
    for trial in study.trials:
        assert trial.intermediate_values and all(v <= 0 for v in trial.intermediate_values.values())
        if trial.state.name == "COMPLETE":
            assert trial.value is not None and 250 <= trial.value <= 1000
    summary = json.loads(result.outputs.summary_json.read_text())
    assert summary["directions"] == ["minimize"]
    markdown = result.outputs.summary.read_text()
    assert "minimize steps_to_threshold" in markdown and "threshold 20.0" in markdown
    assert "negated eval return" in markdown


@pytest.mark.slow
def test_a_return_and_steps_study_writes_its_pareto_front_without_pruning(
    home: Settings, tiny_spec: Callable[..., ExperimentSpec], tmp_path: Path
) -> None:
    spec = tiny_spec(
        **{
            "tune.objective": {**STEPS, "type": "return_and_steps"},
            "tune.n_trials": 3,
            "tune.pruner": {"type": "median", "n_startup_trials": 0},
        }
    )
    board = io.StringIO()
    result = run_study(
        spec, study_name="pareto", out_dir=tmp_path / "o", live=False, progress=board
    )
    summary = json.loads(result.outputs.summary_json.read_text())
    front = summary["pareto_front"]
    complete = [t for t in summary["trials"] if t["state"] == "COMPLETE"]
    assert len(complete) == 3 and front  # nothing pruned
    for trial in complete:  # the doctor's top cause of each seed's run ("": none found)
        assert len(trial["top_causes"]) == len(trial["seed_values"])
        assert set(trial["top_causes"]) <= {*CAUSES, ""}
    for point in front:  # no complete trial beats a front point on both objectives
        assert not any(
            t["values"][0] > point["final_return"] and t["values"][1] < point["steps_to_threshold"]
            for t in complete
        )
    assert summary["best_trial"] == front[0]["number"]
    assert summary["pruning"] == "off (multi-objective)"
    markdown = result.outputs.summary.read_text()
    assert "## Pareto front" in markdown and "pruner: off" in markdown
    assert [p.name for p in result.outputs.plots] == ["pareto_front.png"]
    client = MlflowClient(home.tracking_uri)
    steps = client.get_metric_history(result.parent_run_id, "pareto/steps_to_threshold")
    assert {m.step for m in steps} == {p["number"] for p in front}
