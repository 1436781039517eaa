"""The reward vocabulary: validated parameters, scores on whole responses."""

from __future__ import annotations

import pytest

from ppo_platform.trainers.lm.errors import LMTrainerError
from ppo_platform.trainers.lm.rewards import Sample, WeightedSum, build_reward


def sample(response: str, reference: str | None = "19", tokens: int = 3) -> Sample:
    return Sample("12+7=", response, reference, tokens)


def test_exact_answer_compares_the_stripped_response_with_the_reference():
    reward = build_reward("exact_answer", {"correct": 2.0, "wrong": -1.0})
    assert reward(sample(" 19 ")) == 2.0
    assert reward(sample("18")) == -1.0


def test_exact_answer_without_a_reference_names_the_fix():
    with pytest.raises(LMTrainerError, match="reference answer"):
        build_reward("exact_answer")(sample("19", reference=None))


def test_contains_and_regex():
    assert build_reward("contains", {"text": "9"})(sample("19")) == 1.0
    assert build_reward("contains", {"text": "X", "case_sensitive": False})(sample("x")) == 1.0
    assert build_reward("regex", {"pattern": r"^\d+$", "score": 0.5})(sample("19")) == 0.5
    assert build_reward("regex", {"pattern": r"^\d+$"})(sample("1a")) == 0.0


def test_length_penalty_counts_tokens_beyond_the_free_ones():
    reward = build_reward("length_penalty", {"per_token": 0.1, "free_tokens": 2})
    assert reward(sample("19", tokens=5)) == pytest.approx(-0.3)
    assert reward(sample("19", tokens=1)) == 0.0


def test_a_weighted_sum_combines_rewards():
    combined = WeightedSum(
        (
            (1.0, build_reward("exact_answer")),
            (0.5, build_reward("length_penalty", {"per_token": 1.0})),
        )
    )
    assert combined(sample("19", tokens=2)) == pytest.approx(1.0 - 1.0)


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("bleu", {}, "not in the vocabulary"),
        ("exact_answer", {"bonus": 1}, "no parameter 'bonus'"),
        ("regex", {"pattern": "("}, "not a valid regular expression"),
        ("regex", {"pattern": "a" * 201}, "1 to 200 characters"),
        ("contains", {}, "text"),
        ("length_penalty", {"per_token": -1}, "per_token must be >= 0"),
        ("exact_answer", {"correct": float("nan")}, "correct must be a finite number"),
    ],
)
def test_bad_rewards_are_refused_naming_what_is_wrong(name, params, message):
    with pytest.raises(LMTrainerError, match=message):
        build_reward(name, params)


@pytest.mark.timeout(60)  # Python's re would not finish this in a lifetime: a hang fails
def test_a_pattern_that_backtracks_exponentially_in_re_matches_in_linear_time():
    # Python's re takes ~1.6^n steps on this pattern and a near-miss text; RE2 takes ~n.
    reward = build_reward("regex", {"pattern": r"^(b|bb)+c$"})
    assert reward(sample("b" * 5000 + "!")) == 0.0
    assert reward(sample("b" * 50 + "c")) == 1.0


@pytest.mark.parametrize("pattern", [r"(ab)\1", r"x(?=y)", r"(?<!q)u"])
def test_patterns_re2_cannot_run_in_linear_time_are_refused_with_the_reason(pattern):
    with pytest.raises(LMTrainerError, match="RE2") as caught:
        build_reward("regex", {"pattern": pattern})
    assert "rewrite it without them" in str(caught.value)
