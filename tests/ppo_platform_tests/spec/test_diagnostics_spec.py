"""The spec's `diagnostics:` rules: defaults, refusals, wiring to the trainer and the plan."""

from __future__ import annotations

import pytest

from ppo_platform.errors import SpecError
from ppo_platform.planner import plan_experiment
from ppo_platform.spec.loader import validate_data
from ppo_platform.training.algorithms import ppo_kwargs
from ppo_platform.training.monitoring import thresholds_for


def spec_with(**diagnostics: object):
    return validate_data({"name": "d", "env": "CartPole-v1", "diagnostics": diagnostics})


def test_defaults_read_the_post_update_kl_and_floor_the_return_variance() -> None:
    d = spec_with().diagnostics
    assert (d.kl_source, d.return_variance_floor, d.value_scale) == ("post_update", 1e-3, None)
    assert d.explained_variance_min == 0.05


def test_unknown_kl_source_is_refused_naming_the_field_and_the_choices() -> None:
    with pytest.raises(SpecError) as error:
        spec_with(kl_source="epoch")
    text = str(error.value)
    assert "diagnostics.kl_source" in text and "post_update" in text and "minibatch" in text


@pytest.mark.parametrize(("field", "value"), [("return_variance_floor", 2.0), ("value_scale", 0)])
def test_out_of_range_variance_floor_fields_are_refused(field: str, value: float) -> None:
    with pytest.raises(SpecError, match=f"diagnostics.{field}"):
        spec_with(**{field: value})


def test_kl_source_reaches_the_trainer_and_the_monitor() -> None:
    spec = spec_with(kl_source="minibatch", return_variance_floor=0.02, value_scale=50.0)
    assert ppo_kwargs(spec)["kl_source"] == "minibatch"
    thresholds = thresholds_for(spec)
    assert (thresholds.kl_source, thresholds.return_variance_floor) == ("minibatch", 0.02)
    assert thresholds.value_scale == 50.0


def test_the_plan_states_the_floor_the_kl_source_and_re_arming() -> None:
    markdown = plan_experiment("CartPole-v1", 100_000).markdown
    assert "**Variance floor.**" in markdown and "not informative" in markdown
    assert "**KL source.**" in markdown and "train/approx_kl_post" in markdown
    assert "**Re-arming.**" in markdown and "same episode" in markdown
