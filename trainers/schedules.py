"""Picklable schedules in SB3's convention: called with progress_remaining, 1 -> 0 over training."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConstantSchedule:
    value: float

    def __call__(self, progress_remaining: float) -> float:
        return self.value


@dataclass(frozen=True)
class LinearSchedule:
    """Linear decay from `start` (progress_remaining 1) to `end` (progress_remaining 0)."""

    start: float
    end: float = 0.0

    def __call__(self, progress_remaining: float) -> float:
        # SB3 overshoots the budget by up to one rollout: progress_remaining dips below 0.
        remaining = min(max(progress_remaining, 0.0), 1.0)
        return self.end + (self.start - self.end) * remaining
