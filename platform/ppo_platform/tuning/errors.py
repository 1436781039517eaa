"""Errors of the tuning layer (PlatformErrors, mapped to exit codes in ppo_platform.errors)."""

from __future__ import annotations

from ppo_platform.errors import PlatformError, TrainingError


class TrialFailed(PlatformError):
    """A trial that cannot be scored: invalid spec, diverged, or stopped by an alert. Caught
    by the study (the trial is marked failed with the reason); never reaches the CLI."""


class TuningError(TrainingError):
    """The study could not run or produced nothing to report (no completed trial, a worker
    process crashed): a training failure of the study as a whole (exit 1, HTTP 500)."""
