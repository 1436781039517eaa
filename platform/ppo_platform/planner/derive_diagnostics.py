"""Derivation rules for the diagnostics section of a plan: `derive_x(basis) -> Choice`.

Split from `derive_rules` (same contract). The thresholds are the monitor's defaults except where
a use case's known-good runs sit outside them (`UseCase.kl_healthy_max`, `UseCase.kl_alert`).
"""

from __future__ import annotations

from ppo_platform.planner.derive_rules import Choice
from ppo_platform.planner.sizing import Basis

DEFAULT_KL_HEALTHY_MAX = 0.02  # the lessons' healthy approx KL (DiagnosticsSpec's default)
DEFAULT_KL_ALERT = 0.1  # the lessons' KL alert level (DiagnosticsSpec's default)


def derive_diagnostics_window(b: Basis) -> Choice:
    reason = (
        "a signal that holds this many updates in a row is 'sustained' "
        f"(~2% of the {b.updates} updates, kept in 3-10)"
    )
    return Choice("diagnostics.window", min(10, max(3, b.updates // 50)), reason)


def derive_on_alert(b: Basis) -> Choice:
    return Choice(
        "diagnostics.on_alert",
        "warn",
        "alerts are logged to MLflow and shown while "
        "training; switch to stop to end a run on the first critical alert",
    )


def derive_kl_healthy_max(b: Basis) -> Choice:
    if b.case.kl_healthy_max is None:
        reason = (
            "the lessons' healthy approx KL; above it a high clip fraction is an alert (below "
            "it the clip fraction measures epsilon, not the step)"
        )
        return Choice("diagnostics.kl_healthy_max", DEFAULT_KL_HEALTHY_MAX, reason)
    return Choice("diagnostics.kl_healthy_max", b.case.kl_healthy_max, b.case.kl_healthy_reason)


def derive_kl_alert(b: Basis) -> Choice:
    if b.case.kl_alert is None:
        reason = "the lessons' alert level: a step this far from the rollout's policy is critical"
        return Choice("diagnostics.kl_alert", DEFAULT_KL_ALERT, reason)
    return Choice("diagnostics.kl_alert", b.case.kl_alert, b.case.kl_alert_reason)
