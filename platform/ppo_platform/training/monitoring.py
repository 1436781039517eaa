"""The spec's `diagnostics:` section as the trainers' monitor sees it, and what it reports."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import fields
from typing import Any

from ppo_platform.health import (
    Alert,
    DiagnosticsMonitor,
    Thresholds,
    explained_variance_informative,
)
from ppo_platform.spec.experiment import ExperimentSpec


def thresholds_for(spec: ExperimentSpec) -> Thresholds:
    """The monitor's thresholds: every `Thresholds` field read from the spec's namesake."""
    d = spec.diagnostics
    return Thresholds(**{f.name: getattr(d, f.name) for f in fields(Thresholds)})


def diagnostics_row(monitor: DiagnosticsMonitor, metrics: dict[str, float]) -> dict[str, float]:
    """The `diagnostics/*` metrics of an update, after `monitor.check` has seen it."""
    row = {"diagnostics/alerts_total": float(len(monitor.alerts))}
    row.update({f"diagnostics/alerts/{name}": float(n) for name, n in monitor.counts.items()})
    informative = explained_variance_informative(metrics, monitor.thresholds)
    if informative is not None:  # 0: the returns barely varied, explained variance not judged
        row["diagnostics/explained_variance_informative"] = float(informative)
    return row


def alerts_document(monitor: DiagnosticsMonitor) -> dict[str, Any]:
    """`alerts.json`: every alert (one per episode) and the per-signal summary."""
    return {"alerts": [a.to_dict() for a in monitor.alerts], "signals": monitor.summary()}


def raise_alerts(
    monitor: DiagnosticsMonitor,
    on_alert: str,
    update: int,
    steps: int,
    metrics: dict[str, float],
    emit: Callable[[str], None],
    stop_alert: Alert | None,
    explain: Callable[[], str] | None = None,
) -> Alert | None:
    """Check an update's metrics: every new alert is emitted (its formatted message, then what
    `explain` adds: the doctor's likely cause so far), and the first critical one becomes the
    stop alert when `on_alert` is `stop`. Returns the stop alert (the one passed in if there
    was one already)."""
    for alert in monitor.check(update, steps, metrics):
        emit(alert.format() + (explain() if explain is not None else ""))
        if on_alert == "stop" and alert.severity == "critical" and stop_alert is None:
            stop_alert = alert
    return stop_alert


def update_row(metrics: dict[str, float], episodes: Iterable[dict] | None, fps: float) -> dict:
    """An update's MLflow row: the trainer's metrics, the mean return and length of the
    episodes in SB3's `ep_info_buffer` (the last 100), and the env steps per second."""
    finished = list(episodes or [])
    count = len(finished) or math.nan  # SB3's safe_mean: nan when no episode has ended
    return {
        **metrics,
        "rollout/ep_rew_mean": float(sum(ep["r"] for ep in finished) / count),
        "rollout/ep_len_mean": float(sum(ep["l"] for ep in finished) / count),
        "time/fps": fps,
    }
