"""The comparison statistics against answers known in advance (docs/guides/comparing-runs.md)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import trim_mean

from ppo_platform.reports import statistics as st


def test_iqm_is_the_mean_of_the_middle_half_as_scipy_trims_it():
    scores = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 100.0])
    assert st.iqm(scores) == pytest.approx(trim_mean(scores, 0.25)) == pytest.approx(3.5)
    assert st.point(scores, "median") == 3.5
    assert st.point(scores, "mean") == pytest.approx(15.125)


def test_a_known_difference_is_better_one_way_and_worse_the_other():
    rng = np.random.default_rng(0)
    strong, weak = rng.normal(400, 30, 10), rng.normal(200, 30, 10)
    up = st.compare_pair("strong", strong, "weak", weak)
    down = st.compare_pair("weak", weak, "strong", strong)
    assert (up.verdict, down.verdict) == (st.BETTER, st.WORSE)
    assert up.probability_of_improvement == 1.0 and down.probability_of_improvement == 0.0
    assert up.ci[0] > 0.5 and down.ci[1] < 0.5


def test_the_same_population_twice_is_indistinguishable_in_at_least_95_percent_of_200_draws():
    rng = np.random.default_rng(1)
    calls = [
        st.compare_pair("x", rng.normal(size=10), "y", rng.normal(size=10), seed=repeat).verdict
        for repeat in range(200)
    ]
    assert calls.count(st.INDISTINGUISHABLE) >= 190


def test_the_iqm_interval_covers_the_true_iqm_at_least_93_percent_and_stays_in_range():
    """1,000 synthetic draws of 20 seeds from N(0, 1), whose IQM is 0: the 95% interval's
    coverage, and every bound inside the draw's own min and max."""
    rng = np.random.default_rng(2)
    covered, inside = 0, 0
    for repeat in range(1000):
        scores = rng.normal(size=20)
        low, high = st.bootstrap_interval(scores, "iqm", seed=repeat, reps=1000)
        covered += low <= 0.0 <= high
        inside += scores.min() <= low <= high <= scores.max()
    assert covered >= 930
    assert inside == 1000


@pytest.mark.parametrize("statistic", st.STATISTICS)
def test_intervals_never_leave_the_observed_range_of_bounded_returns(statistic):
    scores = [500.0, 500.0, 500.0, 12.0, 9.0]  # CartPole returns: the interval stays in [9, 500]
    low, high = st.bootstrap_interval(scores, statistic)
    assert 9.0 <= low <= high <= 500.0


def test_the_bootstrap_is_seeded_and_reproducible():
    scores = np.random.default_rng(3).normal(size=12)
    assert st.bootstrap_interval(scores, seed=7) == st.bootstrap_interval(scores, seed=7)
    assert st.bootstrap_interval(scores, seed=7) != st.bootstrap_interval(scores, seed=8)


def test_stratified_bootstrap_resamples_within_each_task():
    """Two envs on very different scales: every replicate keeps 3 seeds of each, so the IQM's
    interval stays well inside the pooled range (a pooled resample could draw all 6 from one)."""
    scores = {"a": [0.0, 1.0, 2.0], "b": [100.0, 101.0, 102.0]}
    low, high = st.bootstrap_interval(scores, "mean", reps=4000)
    assert 49.0 <= low <= high <= 53.0


def test_probability_of_improvement_counts_ties_as_half():
    assert st.probability_of_improvement([1.0, 2.0], [1.0, 2.0]) == 0.5
    assert st.probability_of_improvement([3.0], [1.0, 3.0]) == 0.75
    per_task = st.probability_of_improvement({"a": [2.0], "b": [0.0]}, {"a": [1.0], "b": [1.0]})
    assert per_task == 0.5  # 1 on task a, 0 on task b


def test_seeds_too_few_for_an_exact_test_give_no_verdict_however_far_apart():
    assert st.compare_pair("x", [500.0] * 3, "y", [9.0] * 3).verdict == st.INDISTINGUISHABLE
    assert st.compare_pair("x", [500.0] * 4, "y", [9.0] * 4).verdict == st.BETTER


def test_one_seed_gives_no_verdict():
    pair = st.compare_pair("x", [500.0], "y", [20.0])
    assert pair.ci == (0.0, 1.0) and pair.verdict == st.INDISTINGUISHABLE


def test_solve_rate_has_the_exact_clopper_pearson_interval():
    rate = st.solve_rate(18, 20)
    assert rate.rate == 0.9
    assert rate.ci == pytest.approx((0.6830, 0.9877), abs=1e-4)  # the textbook values
    assert st.solve_rate(0, 5).ci[0] == 0.0 and st.solve_rate(5, 5).ci[1] == 1.0
    assert "18/20 solved" in rate.describe()


def test_fewer_than_five_seeds_is_said_plainly():
    assert st.seeds_warning("lr=1e-3", 5) is None
    assert "only 3 seeds" in str(st.seeds_warning("lr=1e-3", 3))
    summary = st.summarize_group("lr=1e-3", [1.0, 2.0, 3.0], threshold=2.0)
    assert summary.warning is not None and summary.n == 3
    assert summary.solve_rate is not None and summary.solve_rate.solved == 2


def test_bad_input_names_the_problem():
    with pytest.raises(ValueError, match="not all finite"):
        st.iqm([1.0, float("nan")])
    with pytest.raises(ValueError, match="different tasks"):
        st.probability_of_improvement({"a": [1.0]}, {"b": [1.0]})
    with pytest.raises(ValueError, match="baseline 'z'"):
        st.comparison_pairs(["x", "y"], "z")


def test_normalised_scores_put_random_at_0_and_solved_at_1():
    from ppo_platform.reports.normalization import LEVELS, normalize, normalize_tasks

    assert normalize("CartPole-v1", [25.0, 475.0]).tolist() == [0.0, 1.0]
    assert set(LEVELS) >= {"CartPole-v1", "Pendulum-v1", "HalfCheetah-v5", "ALE/Breakout-v5"}
    both = normalize_tasks({"CartPole-v1": [475.0], "Pendulum-v1": [-200.0]})
    assert both["Pendulum-v1"].tolist() == [1.0]
    assert normalize_tasks({"Acrobot-v1": [-90.0]})["Acrobot-v1"].tolist() == [-90.0]
    with pytest.raises(ValueError, match="no random and solved levels for env 'Acrobot-v1'"):
        normalize("Acrobot-v1", [-90.0])


def test_benchmark_cells_give_the_iqm_with_its_interval_or_say_1_seed():
    assert st.describe_scores([500.0]) == "500.0 (1 seed)"
    assert st.describe_scores([500.0, 500.0, 500.0]) == "IQM 500.0 [500.0, 500.0] (95% CI, 3 seeds)"
