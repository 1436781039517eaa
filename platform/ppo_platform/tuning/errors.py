"""Errors of the tuning layer (both are PlatformErrors, mapped to exit codes by the CLI)."""

from __future__ import annotations

from ppo_platform.errors import PlatformError


class TrialFailed(PlatformError):
    """A trial that cannot be scored: invalid spec, diverged, or stopped by an alert."""


class TuningError(PlatformError):
    """The study could not run or produced nothing to report (no completed trial, a worker
    process crashed)."""
