"""PPO health checks run after every update: thresholds in, structured alerts out.

The signals and their advice are the lessons' working heuristics (docs/guides/diagnostics.md).
Pure Python: the monitor is fed the update's metrics by whatever trainer produced them (the
platform's update listener); its thresholds are `ppo_platform.health.thresholds`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ppo_platform.health.alerts import Alert, Severity, SignalState, SignalSummary
from ppo_platform.health.signals import (
    CLIP_FRACTION,
    CLIP_RANGE,
    EXPLAINED_VARIANCE,
    KL,
    KL_POST,
    LEARNING_RATE,
    RETURNS_RMS,
    RETURNS_STD,
)
from ppo_platform.health.thresholds import ANNEALED_FRACTION, MIN_CLIP_RANGE_CHECKED, Thresholds

__all__ = ["RULES", "Alert", "DiagnosticsMonitor", "Reading", "Signal", "Thresholds"]


@dataclass(frozen=True)
class Reading:
    """One update's metrics as the rules see them."""

    update: int
    timestep: int
    metrics: Mapping[str, float]
    thresholds: Thresholds
    total_timesteps: int
    annealed: bool = False  # the LR or clip range has decayed below ANNEALED_FRACTION of its peak

    def finite(self, name: str) -> float | None:
        """The metric's value, or None when it is missing or not finite."""
        value = self.metrics.get(name)
        return value if value is not None and math.isfinite(value) else None

    def alert(
        self,
        signal: str,
        value: float,
        threshold: float,
        severity: Severity,
        message: str,
        advice: str,
    ) -> Alert:
        return Alert(
            self.update, self.timestep, signal, value, threshold, severity, message, advice
        )


@dataclass(frozen=True)
class Signal:
    """A rule's verdict on one update: whether its condition holds, and the alert it would raise.

    An edge signal fires on entering the state, not on every update that stays in it; a
    sustained one fires once when the condition has held `window` updates in a row.
    """

    holds: bool
    alert: Alert
    sustained: bool = False
    higher_is_worse: bool = True
    judged: bool = True  # False: the signal means nothing this update (never alerted)


Rule = Callable[[Reading], Signal | None]  # None: the rule has nothing to judge this update


def kl_too_high(r: Reading) -> Signal | None:
    t = r.thresholds
    kl = r.finite(KL_POST if t.kl_source == "post_update" else KL)
    if not t.monitor_kl or kl is None:
        return None
    which = "post-update" if t.kl_source == "post_update" else "per minibatch"
    return Signal(
        kl > t.kl_alert,
        r.alert(
            "approx_kl",
            kl,
            t.kl_alert,
            "critical",
            f"approx KL {kl:.4f} ({which}) is above {t.kl_alert} "
            f"(healthy: 0 to {t.kl_healthy_max})",
            "lower K (update.epochs) or the learning rate, or set surrogate.target_kl",
        ),
    )


def _clip_fraction(r: Reading) -> float | None:
    """The clip fraction, if it is monitored and means something this update."""
    clip = r.finite(CLIP_FRACTION)
    # A clip range decayed to ~0 (linear schedule at the end) clips everything: no signal.
    clip_range_in_effect = r.metrics.get(CLIP_RANGE, math.inf) >= MIN_CLIP_RANGE_CHECKED
    if not r.thresholds.monitor_clip_fraction or not clip_range_in_effect:
        return None
    return clip


def _kl_healthy(r: Reading) -> bool:
    """`clip_fraction_needs_kl` and the monitored KL is healthy: the ratios left a small clip
    range while the policy barely moved, so a high clip fraction measures epsilon, not the step."""
    t = r.thresholds
    kl = r.finite(KL_POST if t.kl_source == "post_update" else KL)
    return t.clip_fraction_needs_kl and t.monitor_kl and kl is not None and kl <= t.kl_healthy_max


def _not_judged(r: Reading, signal: str, value: float, threshold: float) -> Signal:
    alert = r.alert(signal, value, threshold, "warning", "not judged", "")
    return Signal(False, alert, judged=False)


def clip_fraction_high(r: Reading) -> Signal | None:
    t, clip = r.thresholds, _clip_fraction(r)
    if clip is None:
        return None
    if _kl_healthy(r):
        return _not_judged(r, "clip_fraction_high", clip, t.clip_fraction_high)
    return Signal(
        clip >= t.clip_fraction_high,
        r.alert(
            "clip_fraction_high",
            clip,
            t.clip_fraction_high,
            "critical",
            f"clip fraction {clip:.3f} is at or above {t.clip_fraction_high}",
            "lower the learning rate or K",
        ),
    )


def clip_fraction_drift(r: Reading) -> Signal | None:
    t, clip = r.thresholds, _clip_fraction(r)
    if clip is None:
        return None
    if _kl_healthy(r):
        return _not_judged(r, "clip_fraction_drift", clip, t.drift_clip_fraction)
    return Signal(
        clip > t.drift_clip_fraction,
        r.alert(
            "clip_fraction_drift",
            clip,
            t.drift_clip_fraction,
            "critical",
            f"clip fraction above {t.drift_clip_fraction} for {t.window} updates in a "
            "row: the policy is drifting from the data",
            "lower the learning rate or K",
        ),
        sustained=True,
    )


def clip_fraction_low(r: Reading) -> Signal | None:
    t, clip = r.thresholds, _clip_fraction(r)
    if clip is None:
        return None
    if r.annealed:  # the schedule shrank the step on purpose
        return _not_judged(r, "clip_fraction_low", clip, t.clip_fraction_low)
    return Signal(
        clip < t.clip_fraction_low,
        r.alert(
            "clip_fraction_low",
            clip,
            t.clip_fraction_low,
            "warning",
            f"clip fraction below {t.clip_fraction_low} for {t.window} "
            "updates: clipping never triggers",
            "raise the learning rate or K",
        ),
        sustained=True,
        higher_is_worse=False,
    )


def explained_variance_informative(
    metrics: Mapping[str, float], thresholds: Thresholds
) -> bool | None:
    """Whether the returns varied enough for explained variance to judge the critic.

    Var(returns) must reach `return_variance_floor` x value_scale^2 (value scale: the spec's, or
    the RMS of the rollout's returns). A solved CartPole run has near-constant returns, and
    1 - Var(y - v)/Var(y) then swings wildly on tiny absolute errors. None: the trainer did not
    report the returns' spread, or there is no explained variance to judge.
    """
    ev, std, rms = (metrics.get(name) for name in (EXPLAINED_VARIANCE, RETURNS_STD, RETURNS_RMS))
    if ev is None or not math.isfinite(ev) or std is None or rms is None:
        return None
    scale = thresholds.value_scale if thresholds.value_scale is not None else rms
    return bool(std**2 >= thresholds.return_variance_floor * scale**2 and std > 0)


def explained_variance_late(r: Reading) -> Signal | None:
    t, ev = r.thresholds, r.finite(EXPLAINED_VARIANCE)
    if ev is None:
        return None
    late = r.total_timesteps > 0 and r.timestep >= t.late_fraction * r.total_timesteps
    judged = explained_variance_informative(r.metrics, t) is not False
    return Signal(
        judged and late and ev <= t.explained_variance_min,
        r.alert(
            "explained_variance",
            ev,
            t.explained_variance_min,
            "warning",
            f"explained variance {ev:.3f} stays at or below {t.explained_variance_min} "
            "late in training: the critic is not learning",
            "check reward scale (normalize rewards), raise value_coef or the LR",
        ),
        sustained=True,
        higher_is_worse=False,
        judged=judged,
    )


# Every check run after an update, in the order their alerts are reported.
RULES: tuple[Rule, ...] = (
    kl_too_high,
    clip_fraction_high,
    clip_fraction_drift,
    clip_fraction_low,
    explained_variance_late,
)


@dataclass
class DiagnosticsMonitor:
    """Checks each update's metrics; one alert per episode of a signal in its alert state.

    An edge signal enters its episode on the first update in alert state, a sustained one after
    `window` updates in a row; either re-arms only after `window` healthy updates in a row.
    """

    thresholds: Thresholds = field(default_factory=Thresholds)
    total_timesteps: int = 0
    alerts: list[Alert] = field(default_factory=list)
    summaries: dict[str, SignalSummary] = field(default_factory=dict)
    _states: dict[str, SignalState] = field(default_factory=dict)
    _peaks: dict[str, float] = field(default_factory=dict)

    def check(self, update: int, timestep: int, metrics: Mapping[str, float]) -> list[Alert]:
        """Record and return the alerts this update raises."""
        reading = Reading(
            update,
            timestep,
            metrics,
            self.thresholds,
            self.total_timesteps,
            self._annealed(metrics),
        )
        signals = (rule(reading) for rule in RULES)
        found = [s.alert for s in signals if s is not None and self._fires(s)]
        self.alerts.extend(found)
        return found

    def _annealed(self, metrics: Mapping[str, float]) -> bool:
        """Whether the LR or the clip range is below ANNEALED_FRACTION of its peak so far."""
        annealed = False
        for name in (LEARNING_RATE, CLIP_RANGE):
            value = metrics.get(name)
            if value is None or not math.isfinite(value):
                continue
            peak = self._peaks[name] = max(self._peaks.get(name, value), value)
            annealed = annealed or value < ANNEALED_FRACTION * peak
        return annealed

    def _fires(self, signal: Signal) -> bool:
        alert = signal.alert
        state = self._states.setdefault(alert.signal, SignalState())
        if not signal.judged:
            state.not_judged()
            return False
        window = self.thresholds.window
        in_episode = not state.armed
        fires = state.step(
            signal.holds,
            alert.value,
            signal.higher_is_worse,
            enter_after=window if signal.sustained else 1,
            rearm_after=window,
        )
        if fires:
            self._start_episode(signal, state)
        elif in_episode and signal.holds:
            self.summaries[alert.signal].observe(alert.timestep, alert.value)
        return fires

    def _start_episode(self, signal: Signal, state: SignalState) -> None:
        alert = signal.alert
        summary = self.summaries.get(alert.signal)
        if summary is None:
            summary = SignalSummary(
                alert.signal,
                alert.severity,
                alert.threshold,
                alert.advice,
                signal.higher_is_worse,
                first_step=alert.timestep,
                worst=alert.value,
            )
            self.summaries[alert.signal] = summary
        summary.episodes += 1
        # The streak that fired holds this update's value too: its worst is the episode's so far.
        assert state.streak_worst is not None
        summary.observe(alert.timestep, state.streak_worst)

    def summary(self) -> list[dict[str, object]]:
        """Per signal, in order of first alert: episodes, first/last env step, worst, advice."""
        return [s.to_dict() for s in self.summaries.values()]

    def summary_lines(self) -> list[str]:
        return [s.format() for s in self.summaries.values()]

    @property
    def counts(self) -> Counter[str]:
        """Alerts per signal (one per episode)."""
        return Counter(alert.signal for alert in self.alerts)

    @property
    def critical_count(self) -> int:
        return sum(1 for alert in self.alerts if alert.severity == "critical")
