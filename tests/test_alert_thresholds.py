"""benchmarks/alert_thresholds.py: KL alerts judged against a run's evaluation curve."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import alert_thresholds

        yield alert_thresholds
    finally:
        sys.path.remove(str(BENCHMARKS))


CURVE = [(50_000, 1000.0), (100_000, 1100.0), (150_000, 300.0), (200_000, 1200.0), (250_000, 950.0)]


def test_a_regression_is_an_evaluation_a_fraction_below_the_best_so_far(bench):
    assert bench.regressions(CURVE, drop=0.2) == [150_000, 250_000]  # 300 and 950 < 0.8 x best
    assert bench.regressions(CURVE, drop=0.7) == [150_000]  # 300 < 0.3 x 1100; 950 > 0.3 x 1200


def test_alerts_are_counted_as_warnings_of_a_fall_or_as_idle(bench):
    kl = [(120_000, 0.12), (130_000, 0.4), (160_000, 0.05), (240_000, 0.16), (260_000, 0.9)]
    at_01 = bench.judge(kl, CURVE, threshold=0.1, window=50_000, drop=0.2)
    # 120k and 130k come before the fall at 150k, 240k before the one at 250k; 260k after both.
    assert at_01 == {"alerts": 4, "regressions": 2, "warned": 2, "idle": 1}
    at_03 = bench.judge(kl, CURVE, threshold=0.3, window=50_000, drop=0.2)
    assert at_03 == {"alerts": 2, "regressions": 2, "warned": 1, "idle": 1}


def test_a_home_without_a_store_is_refused_before_mlflow_creates_one(bench, tmp_path):
    with pytest.raises(SystemExit, match=r"no mlflow\.db"):
        bench.read_run(tmp_path / "nowhere", "0" * 32)
    assert not (tmp_path / "nowhere").exists()
