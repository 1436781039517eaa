"""Search spaces: parsing, refusals before anything runs, and validity of every sampled spec."""

from __future__ import annotations

from collections.abc import Callable

import optuna
import pytest

from ppo_platform.errors import SpecError
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.loader import load_spec_text
from ppo_platform.spec.search import (
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from ppo_platform.tuning.auto_space import auto_space, with_auto_space
from ppo_platform.tuning.space import base_data, build_trial_spec, check_space, sample

SPEC_WITH_SPACE = """\
name: space
env: CartPole-v1
tune:
  space:
    update.learning_rate.start: {type: float, low: 1.0e-4, high: 1.0e-2, log: true}
    update.epochs: {type: int, low: 2, high: 30, step: 2}
    policy.net_arch: {type: categorical, choices: [[64, 64], [128]]}
"""


Factory = Callable[..., ExperimentSpec]
SpaceFactory = Callable[[dict], ExperimentSpec]


@pytest.fixture
def space_spec(tiny_spec: Factory) -> SpaceFactory:
    return lambda space: tiny_spec(**{"tune.space": space})


def only_issue(error: pytest.ExceptionInfo[SpecError]):
    assert len(error.value.issues) == 1, error.value.render()
    return error.value.issues[0]


def test_space_entries_parse_into_typed_distributions() -> None:
    space = load_spec_text(SPEC_WITH_SPACE).tune.space
    assert isinstance(space["update.learning_rate.start"], FloatDistribution)
    assert space["update.learning_rate.start"].log is True
    assert isinstance(space["update.epochs"], IntDistribution)
    assert space["update.epochs"].step == 2
    assert isinstance(space["policy.net_arch"], CategoricalDistribution)
    assert space["policy.net_arch"].choices == [[64, 64], [128]]


def test_epochs_range_above_30_is_refused_naming_parameter_and_bound() -> None:
    text = SPEC_WITH_SPACE.replace("high: 30, step: 2", "high: 40")
    with pytest.raises(SpecError) as error:
        load_spec_text(text)
    issue = only_issue(error)
    assert issue.path == "tune.space.update.epochs.high"
    assert issue.value == 40
    assert issue.message.startswith("refused")
    assert "30" in issue.message


def test_epochs_range_up_to_30_is_allowed() -> None:
    assert load_spec_text(SPEC_WITH_SPACE).tune.space["update.epochs"].high == 30


def test_clip_choices_including_a_refused_value_are_refused() -> None:
    text = SPEC_WITH_SPACE + (
        "    surrogate.clip_epsilon: {type: categorical, choices: [0.1, 0.2, 0.4]}\n"
    )
    with pytest.raises(SpecError) as error:
        load_spec_text(text)
    issue = only_issue(error)
    assert issue.path == "tune.space.surrogate.clip_epsilon.choices[2]"
    assert issue.value == 0.4
    assert error.value.refused


def test_clip_range_above_0_3_is_refused() -> None:
    text = SPEC_WITH_SPACE + (
        "    surrogate.clip_epsilon.start: {type: float, low: 0.1, high: 0.31}\n"
    )
    with pytest.raises(SpecError) as error:
        load_spec_text(text)
    assert only_issue(error).path == "tune.space.surrogate.clip_epsilon.start.high"


def test_space_naming_an_unknown_field_is_refused_before_training(space_spec: SpaceFactory) -> None:
    spec = space_spec({"update.epoch": {"type": "int", "low": 1, "high": 4}})
    with pytest.raises(SpecError) as error:
        check_space(spec, from_outside=False)
    issue = error.value.issues[0]
    assert issue.path == "tune.space.update.epoch.low"
    assert "unknown key" in issue.message
    assert "epochs" in issue.fix


def test_space_that_can_sample_an_out_of_range_value_is_refused(space_spec: SpaceFactory) -> None:
    spec = space_spec({"advantage.gamma": {"type": "float", "low": 0.9, "high": 1.2}})
    with pytest.raises(SpecError) as error:
        check_space(spec, from_outside=False)
    issue = only_issue(error)
    assert issue.path == "tune.space.advantage.gamma.high"
    assert issue.value == 1.2


def test_space_with_a_value_of_the_wrong_type_is_refused(space_spec: SpaceFactory) -> None:
    spec = space_spec({"update.epochs": {"type": "float", "low": 1.0, "high": 4.0}})
    with pytest.raises(SpecError) as error:
        check_space(spec, from_outside=False)
    assert {i.path for i in error.value.issues} == {
        "tune.space.update.epochs.low",
        "tune.space.update.epochs.high",
    }


def test_space_cannot_tune_the_tune_section(space_spec: SpaceFactory) -> None:
    spec = space_spec({"tune.n_trials": {"type": "int", "low": 1, "high": 4}})
    with pytest.raises(SpecError) as error:
        check_space(spec, from_outside=False)
    assert only_issue(error).path == "tune.space.tune.n_trials"


def test_grid_sampler_refuses_a_float_range(tiny_spec: Factory) -> None:
    spec = tiny_spec(**{"tune.sampler.type": "grid"})
    with pytest.raises(SpecError) as error:
        check_space(spec, from_outside=False)
    issue = only_issue(error)
    assert issue.path == "tune.space.update.learning_rate.start"
    assert "finite" in issue.message


def test_pruner_without_periodic_evaluations_is_refused(tiny_spec: Factory) -> None:
    spec = tiny_spec(**{"tune.pruner.type": "median", "evaluation.every_timesteps": 0})
    with pytest.raises(SpecError) as error:
        check_space(spec, from_outside=False)
    assert only_issue(error).path == "tune.pruner.type"


def test_every_sampled_spec_validates_and_carries_the_sampled_values() -> None:
    spec = load_spec_text(SPEC_WITH_SPACE)
    check_space(spec, from_outside=False)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    data = base_data(spec)
    for _ in range(40):
        trial = study.ask()
        params = sample(trial, spec.tune.space)
        trial_spec = build_trial_spec(data, params, from_outside=False)
        assert 1e-4 <= trial_spec.update.learning_rate.start <= 1e-2
        assert trial_spec.update.epochs in range(2, 31, 2)
        assert trial_spec.policy.net_arch in ([64, 64], [128])  # decoded from Optuna's label
        assert trial_spec.tune is None
        study.tell(trial, 0.0)


def test_invalid_combination_is_a_spec_error_naming_the_field(tiny_spec: Factory) -> None:
    spec = tiny_spec()
    with pytest.raises(SpecError) as error:
        build_trial_spec(base_data(spec), {"update.minibatch_size": 512}, from_outside=False)
    assert only_issue(error).path == "update.minibatch_size"


def test_auto_space_is_centered_on_the_spec_values(tiny_spec: Factory) -> None:
    spec = tiny_spec(**{"update.epochs": 10, "update.learning_rate": 3e-4})
    space = auto_space(spec)
    lr = space["update.learning_rate.start"]
    assert lr["low"] == pytest.approx(1e-4)
    assert lr["high"] == pytest.approx(9e-4)
    assert (space["update.epochs"]["low"], space["update.epochs"]["high"]) == (5, 20)
    assert space["surrogate.clip_epsilon.start"]["high"] == 0.3


def test_auto_space_stays_within_the_refusal_limits_and_validates(tiny_spec: Factory) -> None:
    spec = with_auto_space(tiny_spec(**{"update.epochs": 25}))
    assert spec.tune.space["update.epochs"].high == 30
    check_space(spec, from_outside=False)  # every bound of the derived space validates


def test_auto_space_samples_no_rollout_longer_than_the_budget(tiny_spec: Factory) -> None:
    # 2 envs x 256 steps is the whole 600-step budget's room: 512 and 1024 would train past it.
    spec = with_auto_space(tiny_spec(**{"rollout.n_steps": 256, "budget.total_timesteps": 600}))
    assert spec.tune.space["rollout.n_steps"].choices == [128, 256]
    check_space(spec, from_outside=False)  # the space's own rollout check passes
