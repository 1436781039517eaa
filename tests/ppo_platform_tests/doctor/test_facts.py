"""The doctor's facts: the failure tags it reads are the ones tracking writes, and a patch
applied to a spec validates (or says why not)."""

from __future__ import annotations

import pytest

from ppo_platform.doctor import Finding, facts_from_spec, failure_from_tags, patched_spec
from ppo_platform.doctor import facts as doctor_facts
from ppo_platform.errors import SpecError
from ppo_platform.spec.loader import load_spec_text
from ppo_platform.tracking import tags


def test_the_failure_tags_are_trackings_own() -> None:
    for name in ("FAILURE", "FAILURE_TYPE", "FAILURE_SOURCE", "FAILURE_KIND", "FAILURE_STEP"):
        assert getattr(doctor_facts, name) == getattr(tags, name), name
    assert doctor_facts.FAILURE_INDEX == tags.FAILURE_INDEX


def test_a_failure_reads_back_from_its_tags() -> None:
    failure = failure_from_tags(
        {
            tags.FAILURE: "env 0 returned a non-finite observation",
            tags.FAILURE_SOURCE: "env",
            tags.FAILURE_KIND: "non_finite_observation",
            tags.FAILURE_STEP: "1037",
            tags.FAILURE_INDEX: "2",
        }
    )
    assert failure is not None
    assert (failure.source, failure.step, failure.index) == ("env", 1037, 2)
    assert failure_from_tags({}) is None
    odd = failure_from_tags({tags.FAILURE: "x", tags.FAILURE_SOURCE: "elsewhere"})
    assert odd is not None and odd.source == "unknown"


def test_facts_come_from_the_resolved_spec() -> None:
    spec = load_spec_text("name: f\nenv: {id: CartPole-v1, n_envs: 8}\nrollout: {n_steps: 32}\n")
    facts = facts_from_spec(spec)
    assert (facts.n_envs, facts.n_steps, facts.gamma, facts.learning_rate) == (8, 32, 0.99, 3e-4)


def test_a_patch_that_would_be_refused_is_a_spec_error() -> None:
    spec = load_spec_text("name: f\nenv: CartPole-v1\n")
    fine = Finding("step_too_large", 0.9, 0, [], "", {"update.learning_rate.start": 1e-4})
    assert patched_spec(spec, fine).update.learning_rate.start == 1e-4
    refused = Finding("step_too_small", 0.9, 0, [], "", {"update.epochs": 31})
    with pytest.raises(SpecError, match=r"update\.epochs"):
        patched_spec(spec, refused)
