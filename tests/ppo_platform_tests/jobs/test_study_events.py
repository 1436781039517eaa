"""A study's progress reaches its job as typed events: each finished trial with its value and
run id, and the counts (trials done / total, best so far), read from the study's storage."""

from __future__ import annotations

import io
from pathlib import Path

import optuna
from optuna.trial import TrialState

from ppo_platform.jobs import JobStore, prepare_submission
from ppo_platform.jobs.reporting import EventWriter
from ppo_platform.public import as_utc, event_from
from ppo_platform.tuning.board import StudyBoard
from ppo_platform.tuning.events import StudyStarted, TrialVerified, VerifyStarted
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
PARENT = "c" * 32


def test_trials_and_counts_follow_the_study_into_the_job(store: JobStore, tmp_path: Path) -> None:
    job_id = store.submit("alice", prepare_submission(TUNE, 10**6), None, 10)[0].id
    writer = EventWriter(store, job_id)
    url = f"journal:{tmp_path / 'studies.journal'}"
    study = optuna.create_study(study_name="t-job", storage=open_storage(url), direction="maximize")
    lines = io.StringIO()
    board = StudyBoard(study, 3, stream=lines, live=False, on_event=writer.study_event)
    writer.study_event(StudyStarted("t-job", PARENT, 3))
    assert store.get(job_id).progress == {"trials_done": 0, "trials_total": 3}
    assert store.get(job_id).mlflow_run_id == PARENT

    first = study.ask()
    board.poll()
    assert store.get(job_id).progress == {
        "trials_done": 0,
        "trials_total": 3,
        "trials_running": 1,
        "best_value": None,
        "best_trial": None,
    }
    first.set_user_attr("mlflow_run_id", "d" * 32)
    study.tell(first, 4.5)
    pruned = study.ask()
    pruned.set_user_attr("pruned_reason", "pruned at step 2 (value 1.0)")
    study.tell(pruned, state=TrialState.PRUNED)
    board.poll()
    progress = store.get(job_id).progress
    assert (progress["trials_done"], progress["best_value"], progress["best_trial"]) == (2, 4.5, 0)
    study.tell(study.ask(), 7.25)
    board.poll()
    board.poll()  # nothing changed: nothing written

    assert store.get(job_id).progress == {
        "trials_done": 3,
        "trials_total": 3,
        "trials_running": 0,
        "best_value": 7.25,
        "best_trial": 2,
    }
    events = store.events_after(job_id)
    trials = [e.data for e in events if e.kind == "trial"]
    assert [(t["number"], t["state"], t["value"]) for t in trials] == [
        (0, "COMPLETE", 4.5),
        (1, "PRUNED", None),
        (2, "COMPLETE", 7.25),
    ]
    assert trials[0]["run_id"] == "d" * 32 and trials[1]["reason"].startswith("pruned at step 2")
    counts = [e.data["trials_done"] for e in events if e.kind == "progress"]
    assert counts == [0, 2, 3]  # unchanged polls add nothing
    assert "trial 2 complete: value 7.25" in lines.getvalue()  # the terminal's lines


def test_held_out_verification_is_stored_as_typed_verify_events(store: JobStore) -> None:
    job_id = store.submit("alice", prepare_submission(TUNE, 10**6), None, 10)[0].id
    writer = EventWriter(store, job_id)
    writer.study_event(VerifyStarted(trials=(2, 0), seeds=(5, 6), reused=(0,)))
    writer.study_event(
        TrialVerified(2, 7.25, 6.5, (6.0, 7.0), (5.5, 7.5), "e" * 32, "", reused=False)
    )
    writer.study_event(TrialVerified(0, 4.5, float("nan"), error="worker died", reused=True))
    events = [e for e in store.events_after(job_id) if e.kind == "verify"]
    typed = [event_from(e.id, e.kind, e.data, as_utc(e.created_at)) for e in events]
    assert [(e.kind, e.data.stage) for e in typed] == [
        ("verify", "started"),
        ("verify", "trial"),
        ("verify", "trial"),
    ]
    started, done, failed = (e.data for e in typed)
    assert (started.trials, started.seeds, started.reused) == ([2, 0], [5, 6], [0])
    assert (done.number, done.held_out_value, done.seed_values) == (2, 6.5, [6.0, 7.0])
    assert (done.ci95, done.run_id, done.error) == ([5.5, 7.5], "e" * 32, "")
    assert (failed.held_out_value, failed.error, failed.reused) == (None, "worker died", True)
    assert not [e for e in store.events_after(job_id) if e.kind == "log"]
