"""The dashboard's progress bar: counters while an experiment runs, full once it succeeded."""

from __future__ import annotations

from types import SimpleNamespace

from ppo_platform.api.dashboard.view import progress_fraction


def job(status: str, **progress: int) -> SimpleNamespace:
    return SimpleNamespace(status=status, progress=progress)


def test_running_experiments_show_their_counters() -> None:
    assert progress_fraction(job("running", timesteps=2048, total_timesteps=4096)) == 0.5
    assert progress_fraction(job("running", runs_done=1, runs_total=4)) == 0.25
    assert progress_fraction(job("running", trials_done=3, trials_total=3)) == 1.0
    assert progress_fraction(job("queued")) == 0.0


def test_a_succeeded_run_is_full_even_when_its_last_progress_event_lags() -> None:
    assert progress_fraction(job("succeeded", timesteps=4000, total_timesteps=4096)) == 1.0
    assert progress_fraction(job("failed", timesteps=4000, total_timesteps=4096)) < 1.0
