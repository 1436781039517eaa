"""The spec's `diagnostics:` section as the trainers' monitor sees it, and what it reports."""

from __future__ import annotations

from typing import Any

from ppo_platform.spec.experiment import ExperimentSpec
from trainers.diagnostics import DiagnosticsMonitor, Thresholds, explained_variance_informative


def thresholds_for(spec: ExperimentSpec) -> Thresholds:
    d = spec.diagnostics
    return Thresholds(
        kl_healthy_max=d.kl_healthy_max,
        kl_alert=d.kl_alert,
        clip_fraction_low=d.clip_fraction_low,
        clip_fraction_high=d.clip_fraction_high,
        drift_clip_fraction=d.drift_clip_fraction,
        window=d.window,
        explained_variance_min=d.explained_variance_min,
        late_fraction=d.late_fraction,
        monitor_kl=d.monitor_kl,
        monitor_clip_fraction=d.monitor_clip_fraction,
        kl_source=d.kl_source,
        return_variance_floor=d.return_variance_floor,
        value_scale=d.value_scale,
    )


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
