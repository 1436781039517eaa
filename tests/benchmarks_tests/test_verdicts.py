"""benchmarks.harness.verdicts: KL alerts judged against a run's evaluation curve."""

from __future__ import annotations

from benchmarks.harness.verdicts import judge, regressions

CURVE = [(50_000, 1000.0), (100_000, 1100.0), (150_000, 300.0), (200_000, 1200.0), (250_000, 950.0)]


def test_a_regression_is_an_evaluation_a_fraction_below_the_best_so_far():
    assert regressions(CURVE, drop=0.2) == [150_000, 250_000]  # 300 and 950 < 0.8 x best
    assert regressions(CURVE, drop=0.7) == [150_000]  # 300 < 0.3 x 1100; 950 > 0.3 x 1200


def test_alerts_are_counted_as_warnings_of_a_fall_or_as_idle():
    kl = [(120_000, 0.12), (130_000, 0.4), (160_000, 0.05), (240_000, 0.16), (260_000, 0.9)]
    at_01 = judge(kl, CURVE, threshold=0.1, window=50_000, drop=0.2)
    # 120k and 130k come before the fall at 150k, 240k before the one at 250k; 260k after both.
    assert at_01 == {"alerts": 4, "regressions": 2, "warned": 2, "idle": 1}
    at_03 = judge(kl, CURVE, threshold=0.3, window=50_000, drop=0.2)
    assert at_03 == {"alerts": 2, "regressions": 2, "warned": 1, "idle": 1}
