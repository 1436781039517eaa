"""`ppo-platform tune` over a `ppo_lm` spec's fields: trials train the tiny demo model (a few
updates), are scored by the held-out greedy mean reward, report it to the pruner at every
evaluation, and log through the same tracking client as gymnasium trials."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml
from mlflow.tracking import MlflowClient
from typer.testing import CliRunner

from ppo_platform.cli import app
from ppo_platform.settings import Settings
from ppo_platform.spec.lm import LMExperimentSpec
from ppo_platform.spec.workloads import load_any_spec
from ppo_platform.training.lm_demo import init_demo
from ppo_platform.tuning.study import open_storage

os.environ.setdefault("HF_HUB_OFFLINE", "1")
SPEC = Path(__file__).resolve().parents[3] / "specs" / "lm_arithmetic.yaml"
LR_LOW, LR_HIGH = 1e-5, 1e-3
TUNE: dict[str, Any] = {
    "n_trials": 2,
    "seeds_per_trial": 1,
    "sampler": {"type": "random", "seed": 0},
    "pruner": {"type": "median", "n_startup_trials": 5, "n_warmup_evaluations": 0},
    "space": {
        "update.learning_rate.start": {
            "type": "float",
            "low": LR_LOW,
            "high": LR_HIGH,
            "log": True,
        },
        "lm.kl.beta": {"type": "categorical", "choices": [0.01, 0.1]},
    },
}


def lm_tune_spec(folder: Path, space: dict[str, Any] | None = None, **top: Any) -> Path:
    """specs/lm_arithmetic.yaml cut to 2 updates of 8 prompts, with a tune section."""
    data = yaml.safe_load(SPEC.read_text())
    data["budget"]["updates"] = 2
    data["evaluation"].update(every_updates=1, max_prompts=16, table_rows=2)
    data["lm"]["prompts_per_update"] = 8
    data["update"].update(minibatch_size=4, epochs=2)
    data["tune"] = {**TUNE, "space": space or TUNE["space"]}
    data.update(top)
    path = folder / "lm_tune.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(scope="module")
def demo_home(shared_home: Path) -> Path:
    init_demo(Settings(home=shared_home), sft_steps=10)
    return shared_home


@pytest.mark.slow
def test_tune_an_lm_spec_scores_trials_by_held_out_reward(demo_home: Path, tmp_path: Path):
    result = CliRunner().invoke(
        app, ["tune", str(lm_tune_spec(tmp_path)), "--study", "lm-tiny", "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    storage = open_storage(f"journal:{(demo_home / 'optuna' / 'studies.journal').resolve()}")
    trials = optuna.load_study(study_name="lm-tiny", storage=storage).get_trials()
    assert len(trials) == 2 and all(t.state.name == "COMPLETE" for t in trials)
    client = MlflowClient(f"sqlite:///{(demo_home / 'mlflow.db').resolve()}")
    for trial in trials:
        assert LR_LOW <= trial.params["update.learning_rate.start"] <= LR_HIGH
        assert trial.params["lm.kl.beta"] in (0.01, 0.1)
        assert sorted(trial.intermediate_values) == [1, 2]  # evaluations after updates 1, 2
        assert trial.intermediate_values[2] == pytest.approx(trial.value)
        assert 0.0 <= trial.value <= 1.0  # exact_answer: the held-out accuracy
        run = client.get_run(trial.user_attrs["mlflow_run_id"])
        assert run.data.metrics["tune/value"] == pytest.approx(trial.value)
        (seed_run,) = client.search_runs(
            [run.info.experiment_id],
            filter_string=f"tags.mlflow.parentRunId = '{run.info.run_id}'",
        )
        assert seed_run.data.params["algorithm"] == "ppo_lm"
        assert seed_run.data.metrics["eval/mean_reward"] == pytest.approx(trial.value)
    summary = json.loads((tmp_path / "summary.json").read_text())
    best = max(trials, key=lambda t: t.value)
    assert summary["best_value"] == pytest.approx(best.value)
    tuned = load_any_spec(tmp_path / "best_spec.yaml")
    assert isinstance(tuned, LMExperimentSpec) and tuned.tune is None
    assert tuned.update.learning_rate.start == best.params["update.learning_rate.start"]
    assert "2 updates per seed" in (tmp_path / "summary.md").read_text()


def test_a_space_path_the_lm_spec_lacks_is_refused(demo_home: Path, tmp_path: Path):
    space = {"lm.generation.max_tokens": {"type": "int", "low": 2, "high": 6}}
    result = CliRunner().invoke(app, ["tune", str(lm_tune_spec(tmp_path, space))])
    assert result.exit_code == 2
    assert "tune.space.lm.generation.max_tokens" in result.output
    assert "max_tokens" in result.output and "fix" in result.output.lower()


def test_an_lm_study_without_held_out_prompts_is_refused(demo_home: Path, tmp_path: Path):
    path = lm_tune_spec(tmp_path)
    data = yaml.safe_load(path.read_text())
    data["lm"]["eval_prompts"] = None
    path.write_text(yaml.safe_dump(data))
    result = CliRunner().invoke(app, ["tune", str(path)])
    assert result.exit_code == 2
    assert "lm.eval_prompts" in result.output and "held-out" in result.output


def test_an_lm_study_counts_every_trial_seed_at_its_largest_size(demo_home: Path, tmp_path: Path):
    from ppo_platform.errors import SpecError
    from ppo_platform.jobs.intake import prepare_lm_submission

    space = {"lm.prompts_per_update": {"type": "categorical", "choices": [8, 16]}}
    text = lm_tune_spec(tmp_path, space).read_text()
    # 2 trials x 1 seed x (2 updates x 16 prompts x 4 new tokens) at the space's largest
    submission = prepare_lm_submission(text, 256, "request")
    assert (submission.kind, submission.total_timesteps) == ("tune", 256)
    with pytest.raises(SpecError) as refused:
        prepare_lm_submission(text, 255, "request")
    (issue,) = refused.value.issues
    assert issue.path == "budget.updates" and issue.rule == "max_env_steps"
    assert "256 tokens" in issue.message


def test_each_trial_is_checked_under_its_callers_rules(demo_home: Path, tmp_path: Path):
    """The job worker re-checks every trial as the service checked the spec: a prompts file
    outside the LM folder builds for the command line (absolute paths are the user's own) and
    is refused for the service, before anything is read."""
    from ppo_platform.errors import SpecError
    from ppo_platform.tuning.space import base_data, build_trial_spec

    outside = tmp_path / "held_out.jsonl"
    outside.write_text((demo_home / "lm" / "arithmetic" / "heldout.jsonl").read_text())
    spec = load_any_spec(lm_tune_spec(tmp_path))
    params = {"lm.eval_prompts.path": str(outside)}
    trial = build_trial_spec(base_data(spec), params, from_outside=False)
    assert isinstance(trial, LMExperimentSpec) and trial.lm.eval_prompts is not None
    with pytest.raises(SpecError) as refused:
        build_trial_spec(base_data(spec), params, from_outside=True)
    (issue,) = refused.value.issues
    assert issue.path == "lm.eval_prompts.path" and "absolute path" in issue.message
    assert str(tmp_path) not in issue.message


def _checked_space(folder: Path, space: dict[str, Any], **advantage: Any) -> None:
    from ppo_platform.tuning import check_space

    path = lm_tune_spec(folder, space)
    data = yaml.safe_load(path.read_text())
    data["advantage"].update(advantage)
    path.write_text(yaml.safe_dump(data))
    check_space(load_any_spec(path), from_outside=True)


def test_a_space_over_the_estimator_objective_and_clip_bounds_is_taken(
    demo_home: Path, tmp_path: Path
):
    space = {
        "advantage.estimator": {"type": "categorical", "choices": ["grpo", "rloo"]},
        "advantage.group_size": {"type": "int", "low": 2, "high": 8},
        "surrogate.objective": {"type": "categorical", "choices": ["ppo", "gspo", "cispo"]},
        # the spec writes no surrogate.clip: each trial's clip range is made from its values
        "surrogate.clip.high": {"type": "float", "low": 0.2, "high": 0.28},
    }
    _checked_space(tmp_path, space, group_size=4)  # raises SpecError if any value is refused


def test_a_space_pairing_a_group_estimator_with_a_group_of_one_is_refused(
    demo_home: Path, tmp_path: Path
):
    from ppo_platform.errors import SpecError

    space = {
        "advantage.estimator": {"type": "categorical", "choices": ["gae", "grpo"]},
        "advantage.group_size": {"type": "int", "low": 1, "high": 4},
    }
    with pytest.raises(SpecError) as refused:  # gae with 1 passes, grpo with 4 passes
        _checked_space(tmp_path, space, group_size=4)
    (issue,) = refused.value.issues
    assert issue.path == "tune.space.advantage.group_size" and issue.rule == "group_of_one"
    assert "advantage.estimator grpo with advantage.group_size 1" in issue.message
