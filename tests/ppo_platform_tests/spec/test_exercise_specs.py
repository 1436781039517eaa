"""The lesson exercises' sweep specs (specs/exercises/): every member validates, and the second,
lesson-regime runs of exercises 2 and 3 are in the regime the lesson describes."""

from __future__ import annotations

from pathlib import Path

import pytest

from ppo_platform.spec.loader import load_spec
from ppo_platform.sweeps import expand_sweep

EXERCISES = Path(__file__).resolve().parents[3] / "specs" / "exercises"
EXERCISE_SPECS = sorted(EXERCISES.glob("*.yaml"))


@pytest.mark.parametrize("path", EXERCISE_SPECS, ids=[p.name for p in EXERCISE_SPECS])
def test_every_member_of_an_exercise_sweep_validates_on_three_seeds(path):
    members = expand_sweep(load_spec(path))
    assert sorted({member.seed for member in members}) == [0, 1, 2]
    assert all(member.spec.sweep is None for member in members)


def lesson_regime_members(name: str) -> list:
    return expand_sweep(load_spec(EXERCISES / name))


def assert_lesson_regime(spec) -> None:
    """Constant LR 1e-3, constant clip range, 4 minibatches per epoch."""
    assert (spec.update.learning_rate.start, spec.update.learning_rate.schedule) == (
        1e-3,
        "constant",
    )
    assert spec.surrogate.clip_epsilon.schedule == "constant"
    batch = spec.env.n_envs * spec.rollout.n_steps
    assert batch // spec.update.minibatch_size == 4


def test_exercise_2_second_run_sweeps_k_in_the_lessons_regime():
    members = lesson_regime_members("2b_epochs_sweep_lesson_regime.yaml")
    assert sorted({member.spec.update.epochs for member in members}) == [1, 4, 10, 30]
    assert len(members) == 12
    for member in members:
        assert_lesson_regime(member.spec)
        assert member.spec.surrogate.clip_epsilon.start == 0.2


def test_exercise_3_second_run_compares_kl_penalty_with_three_clip_ranges():
    members = lesson_regime_members("3b_kl_penalty_vs_clip_lesson_regime.yaml")
    clipped = {m.spec.surrogate.clip_epsilon.start for m in members if m.spec.algorithm == "ppo"}
    assert clipped == {0.1, 0.2, 0.3}
    penalized = [m.spec.kl_penalty for m in members if m.spec.algorithm == "ppo_kl"]
    assert {(kl.rule, kl.target) for kl in penalized if kl is not None} == {
        ("lesson", 0.01),
        ("paper", 0.01),
    }
    assert len(members) == 15
    for member in members:
        assert_lesson_regime(member.spec)
        assert member.spec.update.epochs == 10
