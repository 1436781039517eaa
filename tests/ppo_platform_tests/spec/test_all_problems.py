"""All problems of a spec in one answer: schema errors and refusals together (no fixing in
rounds), a conflict with a default said to be the default with the field to set, and a JSON
Schema that says what is always refused."""

from __future__ import annotations

from typing import Any

import pytest

from ppo_platform.errors import SpecError
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.lm import LMExperimentSpec
from ppo_platform.spec.lm_loader import validate_lm_data
from ppo_platform.spec.loader import load_spec_text

HOPPY = """name: hoppy
env: {id: MountainCar-v0, n_envs: 3}
rollout: {n_steps: 8}
update:
  epochs: 35
policy: {net_arch: [32], activaton: relu}
surrogate: {clip_epsilon: 0.45}
budget: {total_timesteps: 2400}
"""


def _issues(text: str) -> dict[str, Any]:
    with pytest.raises(SpecError) as caught:
        load_spec_text(text, "hoppy.yaml")
    return {issue.path: issue for issue in caught.value.issues}


def test_schema_errors_and_refusals_come_in_one_answer() -> None:
    issues = _issues(HOPPY)
    assert set(issues) == {
        "policy.activaton",  # the typo: a schema error
        "update.epochs",  # refused: unsafe trust region
        "surrogate.clip_epsilon.start",  # refused, written in short (a plain number)
        "update.minibatch_size",  # the default 64 is larger than the 3 x 8 rollout
    }
    assert issues["update.epochs"].rule is not None and issues["update.epochs"].line == 5
    assert issues["surrogate.clip_epsilon.start"].line == 7


def test_a_conflict_with_a_default_says_it_is_the_default_and_which_field_to_set() -> None:
    issue = _issues(HOPPY)["update.minibatch_size"]
    assert issue.value == 64
    assert "update.minibatch_size is not set in the spec: this is its default" in issue.message
    assert issue.fix is not None and issue.fix.startswith("set update.minibatch_size in the spec")
    assert (issue.line, issue.column) == (4, 1)  # the `update:` section the spec does write
    assert "hoppy.yaml:1:1" not in issue.format("hoppy.yaml")


def test_a_default_conflict_outside_any_written_section_points_at_no_line() -> None:
    issue = _issues("name: lone\nenv: {id: MountainCar-v0}\nrollout: {n_steps: 16}\n")[
        "update.minibatch_size"
    ]
    assert (issue.line, issue.column) == (None, None)
    assert issue.format("lone.yaml").startswith("lone.yaml: update.minibatch_size = 64")


def test_a_field_with_a_schema_error_is_not_refused_again_under_its_default() -> None:
    text = HOPPY.replace("epochs: 35", 'epochs: "many"').replace("n_envs: 3", "n_envs: 8")
    issues = _issues(text.replace("rollout: {n_steps: 8}", "rollout: {n_steps: 8, x: 1}"))
    assert "update.epochs" in issues and issues["update.epochs"].rule is None
    assert "rollout.x" in issues and "update.minibatch_size" not in issues


def test_an_lm_spec_gets_its_schema_errors_and_refusals_together() -> None:
    data = {
        "name": "lm-rounds",
        "algorithm": "ppo_lm",
        "lm": {
            "model": {"policy": "m"},
            "prompts": {"path": "p.jsonl"},
            "generation": {"max_new_tokens": 4, "temprature": 0.7},
        },
        "update": {"epochs": 31},
    }
    with pytest.raises(SpecError) as caught:
        validate_lm_data(data)
    paths = {issue.path for issue in caught.value.issues}
    assert {"lm.generation.temprature", "lm.reduction", "update.epochs"} <= paths


def test_the_json_schema_says_what_is_always_refused() -> None:
    lm = LMExperimentSpec.model_json_schema()["$defs"]["LMSection"]
    assert "reduction" in lm["required"]
    assert lm["properties"]["reduction"]["enum"] == ["token_mean", "sequence_mean"]
    assert "anyOf" not in lm["properties"]["reduction"]  # null is not admitted
    update = ExperimentSpec.model_json_schema()["$defs"]["UpdateSpec"]["properties"]["epochs"]
    assert update["maximum"] == 30
