"""Verdicts read from a run's logged curves: did an alert come before a fall of the eval return?"""

from __future__ import annotations


def regressions(evaluations: list[tuple[int, float]], drop: float) -> list[int]:
    """Steps of evaluations more than `drop` (a fraction of the best so far) below that best."""
    found: list[int] = []
    best: float | None = None
    for step, value in evaluations:
        if best is not None and best > 0 and value < best * (1 - drop):
            found.append(step)
        best = value if best is None else max(best, value)
    return found


def judge(
    kl: list[tuple[int, float]],
    evaluations: list[tuple[int, float]],
    threshold: float,
    window: int,
    drop: float,
) -> dict[str, int]:
    """Alerts at `threshold`, regressions preceded by one, alerts followed by none."""
    alerts = [step for step, value in kl if value > threshold]
    falls = regressions(evaluations, drop)
    warned = sum(any(fall - window <= a < fall for a in alerts) for fall in falls)
    idle = sum(not any(a < fall <= a + window for fall in falls) for a in alerts)
    return {"alerts": len(alerts), "regressions": len(falls), "warned": warned, "idle": idle}
