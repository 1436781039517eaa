"""The spec's `diagnostics:` section as the trainers' monitor sees it, and what it reports."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from ppo_platform.spec.experiment import ExperimentSpec
from trainers.diagnostics import DiagnosticsMonitor, Thresholds, explained_variance_informative


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
