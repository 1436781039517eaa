"""PPO health checks run after every update: thresholds in, structured alerts out.

The signals and their advice are the lessons' working heuristics (DESIGN.md, "Diagnostics").
Pure Python: the monitor is fed the update's metrics by whatever trainer produced them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Literal

Severity = Literal["warning", "critical"]

KL = "train/approx_kl"
CLIP_FRACTION = "train/clip_fraction"
EXPLAINED_VARIANCE = "train/explained_variance"
CLIP_RANGE = "train/clip_range"
MIN_CLIP_RANGE_CHECKED = 0.01


@dataclass(frozen=True)
class Thresholds:
    """When a signal leaves its healthy range. Defaults are the lessons' values."""

    kl_healthy_max: float = 0.02
    kl_alert: float = 0.1
    clip_fraction_low: float = 0.01
    clip_fraction_high: float = 0.5
    drift_clip_fraction: float = 0.4
    window: int = 5
    explained_variance_min: float = 0.0
    late_fraction: float = 0.5
    monitor_kl: bool = True
    monitor_clip_fraction: bool = True


@dataclass(frozen=True)
class Alert:
    """One diagnostics finding, with where it happened and what to do about it."""

    update: int
    timestep: int
    signal: str
    value: float
    threshold: float
    severity: Severity
    message: str
    advice: str

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    def format(self) -> str:
        return (
            f"[{self.severity}] update {self.update} (step {self.timestep}): {self.message} "
            f"-> {self.advice}"
        )


@dataclass
class _Streak:
    """Counts consecutive updates a condition held; fires once when it reaches the window."""

    length: int = 0

    def step(self, holds: bool, window: int) -> bool:
        self.length = self.length + 1 if holds else 0
        return self.length == window


@dataclass
class DiagnosticsMonitor:
    """Checks each update's metrics; alerts fire when a signal enters its alert state."""

    thresholds: Thresholds = field(default_factory=Thresholds)
    total_timesteps: int = 0
    alerts: list[Alert] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    _active: set[str] = field(default_factory=set)
    _streaks: dict[str, _Streak] = field(default_factory=dict)

    def check(self, update: int, timestep: int, metrics: Mapping[str, float]) -> list[Alert]:
        """Record and return the alerts this update raises."""
        t = self.thresholds
        found: list[Alert] = []

        def edge(holds: bool, alert: Alert) -> None:
            # Alert on entering the state, not on every update that stays in it.
            if holds and alert.signal not in self._active:
                found.append(alert)
            (self._active.add if holds else self._active.discard)(alert.signal)

        def sustained(holds: bool, alert: Alert) -> None:
            streak = self._streaks.setdefault(alert.signal, _Streak())
            if streak.step(holds, t.window):
                found.append(alert)

        new = partial(Alert, update, timestep)

        kl = metrics.get(KL)
        if t.monitor_kl and kl is not None and math.isfinite(kl):
            edge(
                kl > t.kl_alert,
                new(
                    "approx_kl",
                    kl,
                    t.kl_alert,
                    "critical",
                    f"approx KL {kl:.4f} is above {t.kl_alert} (healthy: 0 to {t.kl_healthy_max})",
                    "lower K (update.epochs) or the learning rate, or set surrogate.target_kl",
                ),
            )

        clip = metrics.get(CLIP_FRACTION)
        # A clip range decayed to ~0 (linear schedule at the end) clips everything: no signal.
        clip_range_in_effect = metrics.get(CLIP_RANGE, math.inf) >= MIN_CLIP_RANGE_CHECKED
        if (
            t.monitor_clip_fraction
            and clip is not None
            and math.isfinite(clip)
            and clip_range_in_effect
        ):
            edge(
                clip >= t.clip_fraction_high,
                new(
                    "clip_fraction_high",
                    clip,
                    t.clip_fraction_high,
                    "critical",
                    f"clip fraction {clip:.3f} is at or above {t.clip_fraction_high}",
                    "lower the learning rate or K",
                ),
            )
            sustained(
                clip > t.drift_clip_fraction,
                new(
                    "clip_fraction_drift",
                    clip,
                    t.drift_clip_fraction,
                    "critical",
                    f"clip fraction above {t.drift_clip_fraction} for {t.window} updates in a "
                    "row: the policy is drifting from the data",
                    "lower the learning rate or K",
                ),
            )
            sustained(
                clip < t.clip_fraction_low,
                new(
                    "clip_fraction_low",
                    clip,
                    t.clip_fraction_low,
                    "warning",
                    f"clip fraction below {t.clip_fraction_low} for {t.window} "
                    "updates: clipping never triggers",
                    "raise the learning rate or K",
                ),
            )

        ev = metrics.get(EXPLAINED_VARIANCE)
        late = self.total_timesteps > 0 and timestep >= t.late_fraction * self.total_timesteps
        if ev is not None and math.isfinite(ev):
            sustained(
                late and ev <= t.explained_variance_min,
                new(
                    "explained_variance",
                    ev,
                    t.explained_variance_min,
                    "warning",
                    f"explained variance {ev:.3f} stays at or below {t.explained_variance_min} "
                    "late in training: the critic is not learning",
                    "check reward scale (normalize rewards), raise value_coef or the LR",
                ),
            )

        self.alerts.extend(found)
        self.counts.update(alert.signal for alert in found)
        return found

    @property
    def critical_count(self) -> int:
        return sum(1 for alert in self.alerts if alert.severity == "critical")


def non_finite_metrics(metrics: Mapping[str, float]) -> list[str]:
    """Names of the metrics that are NaN or infinite."""
    return [name for name, value in metrics.items() if not math.isfinite(value)]
