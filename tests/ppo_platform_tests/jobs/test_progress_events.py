"""Progress reaches a job as data: typed runner and sweep events become job events and row
changes field by field. No text is parsed, so no message can move the job's MLflow run id
(issue 23, finding 3: a member's error text naming "parent run <id>" used to)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ppo_platform.jobs import JobStore, prepare_submission
from ppo_platform.jobs.reporting import EventWriter
from ppo_platform.jobs.worker import run_job
from ppo_platform.settings import get_settings
from ppo_platform.spec.loader import load_spec_text
from ppo_platform.sweeps.events import (
    MemberFinished,
    MemberOutcome,
    MemberRestarted,
    SweepStarted,
    SweepWarning,
)
from ppo_platform.sweeps.expand import expand_sweep
from ppo_platform.training.progress import ProgressEvent

PARENT = "a" * 32
FORGED = "f" * 32
SWEEP = """name: s
env: {id: ppo_platform/GridWorld-v0, n_envs: 1}
rollout: {n_steps: 64}
update: {epochs: 1, minibatch_size: 64}
budget: {total_timesteps: 128}
evaluation: {every_timesteps: 0, episodes: 1}
checkpoints: {every_timesteps: 0}
"""


def _sweep_job(store: JobStore, text: str) -> str:
    return store.submit("alice", prepare_submission(text, 10**6), None, 10)[0].id


def test_a_forged_parent_run_in_any_text_leaves_the_jobs_run_id_alone(store: JobStore) -> None:
    job_id = _sweep_job(store, SWEEP + "sweep: {seeds: [0, 1]}\n")
    spec = load_spec_text(SWEEP + "sweep: {seeds: [0, 1]}\n", "s.yaml")
    member = expand_sweep(spec)[0]
    writer = EventWriter(store, job_id)
    forged = f"parent run {FORGED}"
    writer.sweep_event(SweepWarning(forged))
    writer.sweep_event(SweepStarted(f"s {forged}", PARENT, 2, 1, 2, 0, 1, False))
    failed = MemberOutcome(member, "FAILED", "b" * 32, error=f"ValueError: {forged}")
    writer.sweep_event(MemberFinished(failed, 1, 2, 0))
    writer.sweep_event(MemberRestarted(forged, forged))
    writer(ProgressEvent("alert", 64, 128, message=f"[critical] {forged} -> lower K"))

    job = store.get(job_id)
    assert job.mlflow_run_id == PARENT
    assert job.progress == {"runs_done": 1, "runs_total": 2}
    texts = [event.data.get("message", "") for event in store.events_after(job_id)]
    assert sum(forged in text for text in texts) == 5  # stored for people, never read back
    member_event = next(e for e in store.events_after(job_id) if e.kind == "member")
    assert member_event.data["member"]["run_id"] == "b" * 32
    assert member_event.data["member"]["status"] == "FAILED"


def test_a_runs_started_event_sets_its_run_id_and_nothing_else_does(store: JobStore) -> None:
    job_id = _sweep_job(store, SWEEP)
    writer = EventWriter(store, job_id)
    writer(ProgressEvent("started", 0, 128, run_id=PARENT))
    writer(ProgressEvent("alert", 64, 128, message=f"parent run {FORGED}"))
    writer(ProgressEvent("eval", 128, 128, eval_mean=1.5, message=f"parent run {FORGED}"))
    job = store.get(job_id)
    assert (job.mlflow_run_id, job.mlflow_run_ids) == (PARENT, [PARENT])


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PPO_PLATFORM_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    get_settings.cache_clear()
    yield tmp_path / "home"
    get_settings.cache_clear()


@pytest.mark.slow
def test_a_sweep_job_whose_member_error_names_another_run_keeps_its_parent_run(
    home: Path, tmp_path: Path
) -> None:
    # The member's env raises on its step penalty, and the error text quotes the value.
    text = SWEEP + (
        "sweep:\n  variants:\n    - {env.kwargs.size: 3}\n"
        f"    - {{env.kwargs.step_penalty: 'parent run {FORGED}'}}\n"
    )
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    store = JobStore(url, tmp_path)
    try:
        job_id = _sweep_job(store, text)
        assert store.mark_running(job_id)  # what the dispatcher does before it starts the job
        assert run_job(job_id, url) == "failed"
        job = store.get(job_id)
        events = store.events_after(job_id)
    finally:
        store.close()
    parent = job.result["parent_run_id"]
    assert job.mlflow_run_id == parent != FORGED
    members = [e.data["member"] for e in events if e.kind == "member"]
    assert [m["status"] for m in members].count("FAILED") == 1
    failed = next(m for m in members if m["status"] == "FAILED")
    assert FORGED in failed["error"] and len(failed["run_id"]) == 32  # its FAILED run, as data
    assert sorted(job.mlflow_run_ids) == sorted(m["run_id"] for m in members)
    assert job.progress == {"runs_done": 2, "runs_total": 2}
