"""What `validate` accepts must run: a tag name MLflow refuses, a first rollout larger than the
whole budget and an atari wrapper without OpenCV are refused at validation, naming the field
and the fix, before any training."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ppo_platform.cli import EXIT_BAD_INPUT, app
from ppo_platform.errors import SpecError
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.loader import load_spec_text, validate_data
from ppo_platform.spec.names import tag_name_ok

BASE = {
    "name": "acrobot-tags",
    "env": {"id": "Acrobot-v1", "n_envs": 2},
    "rollout": {"n_steps": 32},
    "update": {"epochs": 1, "minibatch_size": 32},
    "budget": {"total_timesteps": 64},
    "evaluation": {"every_timesteps": 0, "episodes": 1},
    "checkpoints": {"every_timesteps": 0},
}


@pytest.mark.parametrize("name", ["batch#4", "owner@lab", "../escape", "/root", "a//b", "x" * 237])
def test_a_tag_name_mlflow_refuses_is_refused_at_validation(name: str) -> None:
    with pytest.raises(SpecError) as caught:
        validate_data({**BASE, "tracking": {"tags": {name: "v", "fine": "v"}}})
    [issue] = caught.value.issues
    assert issue.path == "tracking.tags"
    assert repr(name) in issue.message and "would be refused by MLflow" in issue.message
    assert "'fine'" not in issue.message


def test_the_schema_says_which_tag_names_mlflow_stores() -> None:
    tags = ExperimentSpec.model_json_schema()["$defs"]["TrackingSpec"]["properties"]["tags"]
    pattern = tags["propertyNames"]["pattern"]
    assert re.fullmatch(pattern, "team/owner: ada") and not re.fullmatch(pattern, "batch#4")
    assert tags["propertyNames"]["maxLength"] == 236


def test_tag_names_mlflow_stores_validate_and_are_stored_on_the_run(platform_home: Path) -> None:
    import mlflow

    from ppo_platform.settings import get_settings
    from ppo_platform.training.runner import run_spec

    tags = {"team/owner": "ada", "phase: 2": "warm-up", "lab.bench-3_b": "x"}
    assert all(tag_name_ok(name) for name in tags)
    result = run_spec(validate_data({**BASE, "tracking": {"tags": tags}}))
    stored = mlflow.MlflowClient(get_settings().tracking_uri).get_run(result.run_id).data.tags
    assert {name: stored[name] for name in tags} == tags


def test_a_first_rollout_larger_than_the_budget_is_refused(tmp_path: Path) -> None:
    spec = tmp_path / "big-rollout.yaml"
    spec.write_text(
        "name: big-rollout\nenv: {id: Acrobot-v1, n_envs: 12}\nrollout: {n_steps: 512}\n"
        "budget: {total_timesteps: 4000}\n"
    )
    result = CliRunner().invoke(app, ["validate", str(spec)])
    assert result.exit_code == EXIT_BAD_INPUT
    assert "budget.total_timesteps = 4000: refused: one rollout" in result.output
    assert "12 x 512 = 6144 env steps" in result.output
    assert "raise budget.total_timesteps to at least 6144" in result.output


def test_a_budget_of_whole_rollouts_still_validates() -> None:
    text = "name: fits\nenv: {id: Acrobot-v1, n_envs: 12}\nrollout: {n_steps: 512}\n"
    assert load_spec_text(text + "budget: {total_timesteps: 6144}\n").batch_size == 6144


def test_an_atari_wrapper_without_opencv_names_the_missing_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ppo_platform.envs.ids import check_spec_env

    monkeypatch.setitem(sys.modules, "cv2", None)  # `import cv2` raises ImportError
    spec = validate_data(
        {
            "name": "space-invaders",
            "env": {
                "id": "ALE/SpaceInvaders-v5",
                "kwargs": {"frameskip": 1},
                "wrappers": ["atari", {"name": "frame_stack", "n": 4}],
            },
            "rollout": {"n_steps": 128},
            "update": {"minibatch_size": 128},
            "budget": {"total_timesteps": 1024},
        }
    )
    with pytest.raises(SpecError) as caught:
        check_spec_env(spec)
    [issue] = caught.value.issues
    assert issue.path == "env.wrappers.0"
    assert "needs OpenCV (cv2), which is not installed here" in issue.message
    assert issue.fix is not None and "pip install 'ppo-platform[atari]'" in issue.fix
