"""Alerts and alert episodes: one finding per episode, and a per-signal summary of the run.

An episode starts when a signal enters its alert state and ends only after the signal has been
healthy for `window` updates in a row; a signal that leaves its alert state for an update and
comes back stays in the same episode (no flapping alerts).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

Severity = Literal["warning", "critical"]


def is_worse(value: float, than: float | None, higher_is_worse: bool) -> bool:
    """Whether `value` is further into the alert state than `than` (None: nothing yet)."""
    if than is None:
        return True
    return value > than if higher_is_worse else value < than


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
class SignalSummary:
    """Everything a run's alerts of one signal said, once: episodes, span, worst value, advice."""

    signal: str
    severity: Severity
    threshold: float
    advice: str
    higher_is_worse: bool
    episodes: int = 0
    first_step: int = 0
    last_step: int = 0
    worst: float = 0.0

    def observe(self, timestep: int, value: float) -> None:
        """An update of this signal in its alert state, inside an episode."""
        self.last_step = max(self.last_step, timestep)
        if is_worse(value, self.worst, self.higher_is_worse):
            self.worst = value

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        del data["higher_is_worse"]
        return data

    def format(self) -> str:
        span = f"env steps {self.first_step:,} to {self.last_step:,}"
        return (
            f"{self.signal} [{self.severity}]: {self.episodes} episode(s), {span}, worst "
            f"{self.worst:.4g} (threshold {self.threshold:g}) -> {self.advice}"
        )


@dataclass
class SignalState:
    """Where one signal stands: armed (may fire), the current bad streak, the healthy streak."""

    armed: bool = True
    bad: int = 0
    healthy: int = 0
    streak_worst: float | None = None

    def step(
        self,
        holds: bool,
        value: float,
        higher_is_worse: bool,
        enter_after: int,
        rearm_after: int,
    ) -> bool:
        """Advance one judged update; True when an episode starts (the alert fires)."""
        if not holds:
            self.bad, self.streak_worst = 0, None
            self.healthy += 1
            if not self.armed and self.healthy >= rearm_after:
                self.armed = True
            return False
        self.healthy = 0
        self.bad += 1
        if is_worse(value, self.streak_worst, higher_is_worse):
            self.streak_worst = value
        if self.armed and self.bad >= enter_after:
            self.armed = False
            return True
        return False

    def not_judged(self) -> None:
        """An update on which the signal means nothing: it breaks a bad streak, heals nothing."""
        self.bad, self.streak_worst = 0, None
