"""A study's progress mirrored into its job while it runs: trials done / total, best so far."""

from __future__ import annotations

from pathlib import Path

import optuna
from optuna.trial import TrialState

from ppo_platform.jobs import JobStore, prepare_submission
from ppo_platform.jobs.study_progress import StudyProgress
from ppo_platform.tuning.study import open_storage

TUNE = """name: t
env: {id: ppo_platform/GridWorld-v0, n_envs: 1}
rollout: {n_steps: 64}
budget: {total_timesteps: 256}
tune:
  n_trials: 3
  space:
    update.epochs: {type: int, low: 1, high: 3}
"""


def test_progress_follows_trials_and_the_best_value_while_the_study_runs(
    store: JobStore, tmp_path: Path
) -> None:
    job_id = store.submit("alice", prepare_submission(TUNE, 10**6), None, 10)[0].id
    url = f"journal:{tmp_path / 'studies.journal'}"
    watcher = StudyProgress(store, job_id, url, "t-job", 3, poll_seconds=600)
    watcher.poll()  # no study yet: nothing written
    assert store.get(job_id).progress == {"timesteps": 0, "total_timesteps": 768}
    study = optuna.create_study(study_name="t-job", storage=open_storage(url), direction="maximize")
    with watcher:
        assert store.get(job_id).progress == {"trials_done": 0, "trials_total": 3}
        first = study.ask()
        watcher.poll()
        assert store.get(job_id).progress == {
            "trials_done": 0,
            "trials_total": 3,
            "trials_running": 1,
            "best_value": None,
            "best_trial": None,
        }
        study.tell(first, 4.5)
        study.tell(study.ask(), state=TrialState.PRUNED)
        watcher.poll()
        progress = store.get(job_id).progress
        assert (progress["trials_done"], progress["best_value"], progress["best_trial"]) == (
            2,
            4.5,
            0,
        )
        study.tell(study.ask(), 7.25)
    final = store.get(job_id).progress  # written on exit, between two polls
    assert final == {
        "trials_done": 3,
        "trials_total": 3,
        "trials_running": 0,
        "best_value": 7.25,
        "best_trial": 2,
    }
    events = [e for e in store.events_after(job_id) if e.kind == "progress"]
    assert [e.data["trials_done"] for e in events] == [0, 2, 3]  # unchanged polls add nothing
