"""`--seeds` text and `budget.seeds`: ranges and lists; empty, negative, duplicated, backwards or
too many seeds are refused naming the flag (or field), the value and the fix."""

from __future__ import annotations

import pytest
import yaml

from ppo_platform.errors import BadInputError, SpecError
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.loader import load_spec
from ppo_platform.spec.seeds import MAX_SEEDS, parse_seeds


def test_ranges_and_lists_give_the_seeds_in_order():
    assert parse_seeds("0-3") == [0, 1, 2, 3]
    assert parse_seeds("0,3,9") == [0, 3, 9]
    assert parse_seeds(" 7, 0-2 ") == [7, 0, 1, 2]
    assert parse_seeds(f"0-{MAX_SEEDS - 1}") == list(range(MAX_SEEDS))


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "names no seed"),
        ("1,,2", "names no seed"),
        ("-1", "is not a seed"),
        ("x", "is not a seed"),
        ("5-2", "runs backwards"),
        ("1,0-2", "more than once"),
        (f"0-{MAX_SEEDS}", f"more than {MAX_SEEDS} seeds"),
        ("2147483648", "past the largest seed"),
    ],
)
def test_bad_seeds_are_refused_naming_the_flag_value_and_fix(text, says):
    with pytest.raises(BadInputError) as refused:
        parse_seeds(text)
    issue = refused.value.issues[0]
    assert issue.path == "--seeds" and issue.value == text and says in issue.message
    assert "0-15" in issue.fix


EPOCHS_SPACE = {"type": "int", "low": 2, "high": 4}


def _spec(budget: dict, **more) -> dict:
    return {"name": "s", "env": "CartPole-v1", "rollout": {"n_steps": 8}, "budget": budget, **more}


def test_budget_seeds_take_the_text_or_a_list_and_leave_the_hash_alone():
    text = ExperimentSpec.model_validate(_spec({"total_timesteps": 64, "seeds": "0-2,7"}))
    listed = ExperimentSpec.model_validate(_spec({"total_timesteps": 64, "seeds": [0, 1, 2, 7]}))
    alone = ExperimentSpec.model_validate(_spec({"total_timesteps": 64}))
    assert text.budget.seeds == listed.budget.seeds == [0, 1, 2, 7]
    assert text.spec_hash() == alone.spec_hash()  # the seeds name other runs
    member = text.with_seed(7)
    assert member.budget.seed == 7 and member.budget.seeds is None
    assert member.spec_hash() == alone.with_seed(7).spec_hash() != alone.spec_hash()


@pytest.mark.parametrize(
    ("seeds", "says"),
    [
        ("0,0", "more than once"),
        ([], "names no seed"),
        ([3, -1], "outside 0.."),
        ("a", "not a seed"),
    ],
)
def test_bad_budget_seeds_name_the_field_the_value_and_the_forms(tmp_path, seeds, says):
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(_spec({"total_timesteps": 64, "seeds": seeds})))
    with pytest.raises(SpecError) as refused:
        load_spec(path)
    issue = next(i for i in refused.value.issues if i.path == "budget.seeds")
    assert says in issue.message and issue.value == seeds and "'0-15'" in issue.fix


@pytest.mark.parametrize("search", ["sweep", "tune"])
def test_budget_seeds_beside_a_sweep_or_a_study_are_refused(tmp_path, search):
    section = (
        {"sweep": {"seeds": [0, 1]}}
        if search == "sweep"
        else {
            "tune": {
                "n_trials": 2,
                "space": {"update.epochs": {"type": "int", "low": 2, "high": 4}},
            }
        }
    )
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(_spec({"total_timesteps": 64, "seeds": [0, 1]}, **section)))
    with pytest.raises(SpecError) as refused:
        load_spec(path)
    issue = next(i for i in refused.value.issues if i.path == "budget.seeds")
    assert f"beside {search}" in issue.message and "sweep.seeds" in issue.fix


def test_one_seed_as_a_number_is_a_batch_of_one():
    spec = ExperimentSpec.model_validate(_spec({"total_timesteps": 64, "seeds": 7}))
    assert spec.budget.seeds == [7]
