"""The doctor corpus's held-out protocol (benchmarks/learning/doctor_corpus_split.py): the split
is by env family and no case sits on both sides, every cause is planted twice on two families
(or is declared otherwise), and its confusion matrix, intervals and calibration count."""

from __future__ import annotations

from collections import defaultdict

import gymnasium

from benchmarks.learning.doctor_corpus_split import (
    ALL_FAULTS,
    ALL_GOOD,
    HELD_OUT_FAMILIES,
    NOT_PLANTED,
    ONE_FAMILY_CAUSES,
    TUNING_FAMILIES,
    family_of,
    part_of,
)
from benchmarks.learning.doctor_corpus_stats import (
    calibration,
    confusion,
    held_out_rates,
    interval,
    named_first,
)
from ppo_platform.doctor import CAUSES


def test_the_parts_share_no_family_and_the_tuning_part_is_classic_control():
    assert set(TUNING_FAMILIES) == {"classic_control"}
    assert not set(TUNING_FAMILIES) & set(HELD_OUT_FAMILIES)


def test_no_case_is_in_both_parts():
    names: dict[str, set[str]] = defaultdict(set)
    for fault in ALL_FAULTS:
        names[f"{fault.base}/{fault.name}"].add(part_of(fault))
    for good in ALL_GOOD:
        names[good.name].add(part_of(good))
    assert all(len(parts) == 1 for parts in names.values())
    assert len(names) == len(ALL_FAULTS) + len(ALL_GOOD)  # no name twice
    assert part_of(next(f for f in ALL_FAULTS if f.base == "cartpole")) == "tuning"
    assert part_of(next(f for f in ALL_FAULTS if f.base == "reach")) == "heldout"


def test_every_cause_is_planted_twice_on_two_families_or_declared():
    families: dict[str, set[str]] = defaultdict(set)
    cases: dict[str, int] = defaultdict(int)
    for fault in ALL_FAULTS:
        families[fault.cause].add(family_of(fault))
        cases[fault.cause] += 1
    twice_on_two = {c for c in CAUSES if cases[c] >= 2 and len(families[c]) >= 2}
    assert set(NOT_PLANTED) == {
        "entropy_collapse",
        "lm_reward_hacking",
        "lm_length_collapse",
    }
    assert twice_on_two == set(CAUSES) - set(NOT_PLANTED) - set(ONE_FAMILY_CAUSES)
    assert {c: families[c] for c in ONE_FAMILY_CAUSES} == {
        "lm_kl_penalty_inert": {"lm"},
        "lm_kl_runaway": {"lm"},
        "lm_length_at_limit": {"lm"},
        "lm_group_no_signal": {"lm"},
    }
    assert cases["lm_length_at_limit"] == cases["lm_group_no_signal"] == 2
    assert {"critic_not_learning", "action_saturation"} <= twice_on_two


def test_the_first_update_collapse_is_planted_on_every_gym_family():
    collapse = {family_of(f) for f in ALL_FAULTS if f.name == "lr_huge"}
    assert all(f.cause == "step_too_large" for f in ALL_FAULTS if f.name == "lr_huge")
    assert collapse == {"classic_control", "classic_continuous", "mujoco", "user_python"}


def test_the_held_out_part_has_20_known_good_configs_at_least():
    assert sum(1 for g in ALL_GOOD if part_of(g) == "heldout") >= 20


def test_the_toy_text_family_is_held_out_and_its_envs_declare_a_solved_level():
    toy = [g for g in ALL_GOOD if family_of(g) == "toy_text"]
    assert {g.name for g in toy} == {
        f"frozenlake{size} seed {s}" for size in ("", "8x8") for s in (0, 1)
    }
    assert {part_of(g) for g in toy} == {"heldout"}
    # What the doctor reads as solved: the registry's levels, the lock's declared by its author.
    assert [gymnasium.spec(e).reward_threshold for e in ("FrozenLake-v1", "FrozenLake8x8-v1")] == [
        0.7,
        0.85,
    ]
    assert gymnasium.spec("Lock-v0").reward_threshold == 1.0


def _fault(planted: str, top: str | None, confidence: float | None, **extra: object) -> dict:
    row = {"group": "fault", "name": "reach/x", "seed": 0, "planted": planted, "top": top}
    return {**row, "confidence": confidence, "detected": top == planted, **extra}


def test_the_confusion_matrix_counts_what_was_named_first_per_planted_cause():
    rows = [
        _fault("step_too_large", "step_too_large", 0.9),
        _fault("step_too_large", "step_too_large", 0.9),
        _fault("step_too_large", "no_reward_signal", 0.8),
        _fault("reward_scale", None, None, thin_evidence="the run logged 2 update(s)"),
        _fault("reward_scale", None, None),
    ]
    matrix = confusion(rows)
    assert dict(matrix["step_too_large"]) == {"step_too_large": 2, "no_reward_signal": 1}
    assert dict(matrix["reward_scale"]) == {"not judged": 1, "none": 1}
    assert named_first(rows[3]) == "not judged"


def test_calibration_bins_count_right_and_wrong_namings_known_good_ones_wrong():
    rows = [
        _fault("step_too_large", "step_too_large", 0.9),
        _fault("step_too_large", "no_reward_signal", 0.8),
        _fault("std_collapse", "std_collapse", 0.7),
        _fault("std_collapse", "action_saturation", 0.4),
        {"group": "good", "top": "action_saturation", "confidence": 0.95},
        {"group": "good", "top": None, "confidence": None},
    ]
    table = calibration(rows)
    assert [(t["bin"], t["named"], t["right"]) for t in table] == [
        ((0.0, 0.5), 1, 0),
        ((0.5, 0.8), 1, 1),
        ((0.8, 1.0), 3, 1),
    ]


def test_intervals_are_exact_binomial():
    assert interval(9, 10) == "9/10 (90%; 95% CI 55%-100%)"
    assert interval(0, 20) == "0/20 (0%; 95% CI 0%-17%)"
    assert interval(0, 0) == "0/0"


def test_held_out_rates_leave_the_tuning_part_out():
    rows = [
        {
            **_fault("step_too_large", "step_too_large", 0.9),
            "part": "heldout",
            "fixable": True,
            "recovered": True,
        },
        {**_fault("step_too_large", None, None), "part": "tuning", "name": "cartpole/x"},
        {"group": "good", "part": "heldout", "name": "g", "false_alarm": False, "top": None},
    ]
    rates = held_out_rates(rows)
    assert rates["detection"] == "1/1 (100%; 95% CI 3%-100%)"
    assert rates["false_alarms"] == "0/1 (0%; 95% CI 0%-98%)"
    assert rates["recovery"] == "1/1 (100%; 95% CI 3%-100%)"


def test_the_rejudge_script_answers_help():
    from benchmarks.harness.scripts import help_failure

    assert help_failure("benchmarks.learning.doctor_corpus_rejudge") is None
