"""A study is labelled `tune-<study>` once: a study already named `tune-x` gets the parent run
and the output folder `tune-x`, not `tune-tune-x`."""

from __future__ import annotations

from pathlib import Path

import mlflow

from ppo_platform.settings import get_settings
from ppo_platform.spec.loader import validate_data
from ppo_platform.tuning.runs import open_study_run, study_label
from ppo_platform.tuning.tuner import default_out_dir

SPEC = {
    "name": "greenhouse",
    "env": "Acrobot-v1",
    "rollout": {"n_steps": 64},
    "update": {"minibatch_size": 64},
    "budget": {"total_timesteps": 128},
    "tune": {
        "n_trials": 1,
        "space": {"update.epochs": {"type": "int", "low": 1, "high": 2}},
    },
}


def test_the_label_says_tune_once() -> None:
    assert study_label("greenhouse") == "tune-greenhouse"
    assert study_label("tune-greenhouse") == "tune-greenhouse"
    assert study_label("tuned-greenhouse") == "tune-tuned-greenhouse"


def test_a_study_named_tune_x_gets_the_parent_run_and_folder_tune_x(platform_home: Path) -> None:
    settings = get_settings()
    assert default_out_dir(settings, "tune-greenhouse") == settings.outputs_dir / "tune-greenhouse"
    run = open_study_run(settings, validate_data(SPEC), "tune-greenhouse", "journal", None)
    run.finish("FINISHED", {})
    stored = mlflow.MlflowClient(settings.tracking_uri).get_run(run.run_id)
    assert stored.data.tags["mlflow.runName"] == "tune-greenhouse"
