"""Refusal rules: unsafe but well-formed settings are refused at their boundary, with a reason."""

from __future__ import annotations

import pytest

from ppo_platform.errors import SpecError
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.rules import MAX_CLIP_EPSILON, MAX_EPOCHS, refusals

# Each refused setting: the YAML appended to the minimal spec (from line 3), the issue's path,
# its value, and the limit or fix the message must mention.
REFUSED = {
    "epochs_31": ("update:\n  epochs: 31\n", "update.epochs", 31, "30"),
    "clip_0.31": (
        "surrogate:\n  clip_epsilon: 0.31\n",
        "surrogate.clip_epsilon.start",
        0.31,
        "0.3",
    ),
    "linear_clip_start_0.31": (
        "surrogate:\n  clip_epsilon: {start: 0.31, schedule: linear}\n",
        "surrogate.clip_epsilon.start",
        0.31,
        "0.3",
    ),
    "linear_clip_rising_to_0.5": (
        "surrogate:\n  clip_epsilon: {start: 0.2, end: 0.5, schedule: linear}\n",
        "surrogate.clip_epsilon.end",
        0.5,
        "0.3",
    ),
    "normalize_advantage_off": (
        "surrogate:\n  normalize_advantage: false\n",
        "surrogate.normalize_advantage",
        False,
        "normalize_advantage: true",
    ),
    "monitor_kl_off": (
        "diagnostics:\n  monitor_kl: false\n",
        "diagnostics.monitor_kl",
        False,
        "monitor_kl: true",
    ),
    "monitor_clip_fraction_off": (
        "diagnostics:\n  monitor_clip_fraction: false\n",
        "diagnostics.monitor_clip_fraction",
        False,
        "monitor_clip_fraction: true",
    ),
}


def test_limits_are_the_documented_ones():
    assert (MAX_EPOCHS, MAX_CLIP_EPSILON) == (30, 0.3)


def test_thirty_epochs_are_accepted(load, minimal_spec):
    assert load(minimal_spec + "update:\n  epochs: 30\n").update.epochs == 30


def test_thirty_one_epochs_are_refused(single_issue, minimal_spec):
    issue = single_issue(minimal_spec + "update:\n  epochs: 31\n")
    assert (issue.path, issue.value, issue.line) == ("update.epochs", 31, 4)
    assert issue.message.startswith("refused")


def test_clip_epsilon_0_3_is_accepted(load, minimal_spec):
    spec = load(minimal_spec + "surrogate:\n  clip_epsilon: 0.3\n")
    assert spec.surrogate.clip_epsilon.start == 0.3


def test_clip_epsilon_0_31_is_refused(single_issue, minimal_spec):
    issue = single_issue(minimal_spec + "surrogate:\n  clip_epsilon: 0.31\n")
    assert (issue.path, issue.value, issue.line) == ("surrogate.clip_epsilon.start", 0.31, 4)
    assert issue.message.startswith("refused")


def test_linear_clip_schedule_starting_at_0_3_is_accepted(load, minimal_spec):
    spec = load(minimal_spec + "surrogate:\n  clip_epsilon: {start: 0.3, schedule: linear}\n")
    assert spec.surrogate.clip_epsilon.start == 0.3


def test_linear_clip_schedule_starting_at_0_31_is_refused(single_issue, minimal_spec):
    text = minimal_spec + "surrogate:\n  clip_epsilon:\n    start: 0.31\n    schedule: linear\n"
    issue = single_issue(text)
    assert (issue.path, issue.value, issue.line) == ("surrogate.clip_epsilon.start", 0.31, 5)


def test_linear_clip_schedule_rising_above_0_3_is_refused(single_issue, minimal_spec):
    text = minimal_spec + "surrogate:\n  clip_epsilon:\n    start: 0.1\n    end: 0.31\n"
    text += "    schedule: linear\n"
    issue = single_issue(text)
    assert (issue.path, issue.value, issue.line) == ("surrogate.clip_epsilon.end", 0.31, 6)


def test_normalize_advantage_off_is_refused_for_ppo(single_issue, minimal_spec):
    issue = single_issue(minimal_spec + "surrogate:\n  normalize_advantage: false\n")
    assert (issue.path, issue.value, issue.line) == ("surrogate.normalize_advantage", False, 4)


def test_normalize_advantage_off_is_refused_for_adaptive_kl_ppo(single_issue, minimal_spec):
    text = minimal_spec + "algorithm: ppo_kl\nsurrogate:\n  normalize_advantage: false\n"
    assert single_issue(text).path == "surrogate.normalize_advantage"


def test_normalize_advantage_off_is_allowed_for_the_a2c_baseline(load, minimal_spec):
    spec = load(minimal_spec + "algorithm: a2c\nsurrogate:\n  normalize_advantage: false\n")
    assert spec.surrogate.normalize_advantage is False


def test_monitor_kl_off_is_refused(single_issue, minimal_spec):
    issue = single_issue(minimal_spec + "diagnostics:\n  monitor_kl: false\n")
    assert (issue.path, issue.value, issue.line) == ("diagnostics.monitor_kl", False, 4)


def test_monitor_clip_fraction_off_is_refused(single_issue, minimal_spec):
    issue = single_issue(minimal_spec + "diagnostics:\n  monitor_clip_fraction: false\n")
    assert (issue.path, issue.value, issue.line) == ("diagnostics.monitor_clip_fraction", False, 4)


@pytest.mark.parametrize(("extra", "path", "value", "limit"), REFUSED.values(), ids=list(REFUSED))
def test_refusal_message_names_field_value_limit_and_fix(
    load, minimal_spec, extra, path, value, limit
):
    with pytest.raises(SpecError) as caught:
        load(minimal_spec + extra)
    error = caught.value
    assert error.refused
    [issue] = error.issues
    assert (issue.path, issue.value) == (path, value)
    assert issue.fix
    text = error.render()
    assert "spec.yaml:4:" in text
    assert f"{path} = {value!r}: refused" in text
    assert limit in text
    assert "Fix: " in text


def test_every_broken_rule_is_reported_at_once(load, minimal_spec):
    text = minimal_spec + "update: {epochs: 31}\ndiagnostics: {monitor_kl: false}\n"
    with pytest.raises(SpecError) as caught:
        load(text)
    assert [i.path for i in caught.value.issues] == ["update.epochs", "diagnostics.monitor_kl"]


def test_override_is_refused_like_the_file(single_issue, minimal_spec):
    issue = single_issue(minimal_spec, ["update.epochs=31"])
    assert (issue.path, issue.value) == ("update.epochs", 31)
    assert issue.message.startswith("refused")


def test_refused_override_does_not_point_at_the_file_line_it_replaced(single_issue, minimal_spec):
    issue = single_issue(minimal_spec + "update:\n  epochs: 4\n", ["update.epochs=31"])
    assert (issue.path, issue.value, issue.line) == ("update.epochs", 31, None)


def test_override_can_fix_a_refused_file(load, minimal_spec):
    spec = load(minimal_spec + "update:\n  epochs: 31\n", ["update.epochs=30"])
    assert spec.update.epochs == 30


def test_refusals_checks_a_spec_built_without_the_loader():
    # The tuner and the API build specs from data; the rules must not depend on the loader.
    spec = ExperimentSpec.model_validate(
        {"name": "run", "env": "CartPole-v1", "update": {"epochs": 31}}
    )
    [issue] = refusals(spec)
    assert (issue.path, issue.value) == ("update.epochs", 31)
