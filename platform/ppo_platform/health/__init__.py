"""PPO's health: the thresholds (once), the signal vocabulary, the live monitor and its alerts.

Trainers only emit metrics; the platform feeds each update's metrics to `DiagnosticsMonitor`,
and the doctor (`ppo_platform.doctor`) reads the same names and starts from the same limits.
"""

from ppo_platform.health.alerts import Alert, Severity, SignalSummary
from ppo_platform.health.monitor import (
    DiagnosticsMonitor,
    Reading,
    Signal,
    explained_variance_informative,
)
from ppo_platform.health.thresholds import DEFAULTS, LIMITS, Limits, Thresholds

__all__ = [
    "DEFAULTS",
    "LIMITS",
    "Alert",
    "DiagnosticsMonitor",
    "Limits",
    "Reading",
    "Severity",
    "Signal",
    "SignalSummary",
    "Thresholds",
    "explained_variance_informative",
]
