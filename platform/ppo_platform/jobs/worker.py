"""The body of one job process: load the experiment, run it by kind, write its final status.

This module is imported by the dispatcher (to name `run_job` in a Task) and must stay light:
the runner, sweeps and tuning are imported inside the job process only.

A job whose service died (orphaned) stops and leaves its status `running`: the next start of
the service re-queues it and it resumes from its checkpoint. A job started by the dispatcher
runs under its bounds (`jobs/bounds.py`): CPU, and a dead-man switch its watcher renews while
the service lives, so a job stuck in code that never yields ends all the same.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from ppo_platform.errors import RunNotFoundError
from ppo_platform.execution.base import describe_error
from ppo_platform.jobs.bounds import DeadManSwitch, JobBounds, limit_this_process
from ppo_platform.jobs.reporting import EventWriter, Watcher
from ppo_platform.jobs.store import JobStore
from ppo_platform.settings import Settings, get_settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.lm import LMExperimentSpec
from ppo_platform.spec.workloads import validate_any
from ppo_platform.workloads import run_experiment, workload_of

ORPHANED = "orphaned"  # run_job's answer when it stopped because its parent died


def job_folder(settings: Settings, job_id: str) -> Path:
    """Files a job writes besides its MLflow runs (tuning outputs); `job_id` is 32 hex."""
    return settings.home / "jobs" / job_id


def run_job(job_id: str, database_url: str, nice: int = 0, bounds: JobBounds | None = None) -> str:
    """Run experiment `job_id` to its end; its final status ("orphaned": left running). The
    process (and every thread and process it starts) runs at niceness `nice` or above, and
    under `bounds` when given (the dispatcher's job processes, never a caller's own)."""
    lower_priority(nice)
    switch = None
    if bounds is not None:
        limit_this_process(bounds)
        switch = DeadManSwitch(bounds.lease_seconds)
    store = JobStore(database_url, Path("."), migrate_schema=False)
    try:
        job = store.get(job_id)
        store.update(job_id, pid=os.getpid())
        spec = validate_any(job.spec, source=f"experiment {job_id}", from_outside=True)
        with Watcher(store, job_id, interrupt=job.kind != "run", switch=switch) as watcher:
            status, error, result = _run_kind(store, job, spec, watcher)
        if watcher.orphaned:
            return ORPHANED
        if watcher.cancelled and status != "succeeded":
            status, error = "cancelled", None
        store.finish(job_id, status, error=error, result=result)  # unless ended already
        return status
    finally:
        if switch is not None:
            switch.disarm()
        store.close()


def lower_priority(nice: int) -> None:
    """Training is batch work: under contention for the cores, the API process (and its
    status reads and submissions) goes first. Never raises the priority (that needs root)."""
    current = os.getpriority(os.PRIO_PROCESS, 0)
    if nice > current:
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, 0, min(nice, 19))


def _ensure_tracking_store() -> None:
    """Create the MLflow store before training: several job processes starting together must
    not all create a fresh SQLite MLflow database at once (they collide). The store is created
    by this process's tracking process (MLflow is never imported here)."""
    from ppo_platform.tracking.requests import ensure_store

    settings = get_settings()
    ensure_store(settings.ensure_home() / "tracking-init.lock", settings.tracking_uri)


def _run_kind(
    store: JobStore, job: Any, spec: ExperimentSpec | LMExperimentSpec, watcher: Watcher
) -> tuple[str, str | None, dict[str, Any] | None]:
    """(status, error, result) of the job's kind; errors become a failed status."""
    writer = EventWriter(store, job.id)
    try:
        _ensure_tracking_store()
        if watcher.stopping:
            return "cancelled", None, None
        if job.kind == "tune":  # either kind of spec: the study dispatches on it
            return _tune(store, job.id, spec)
        if job.kind == "sweep":  # either kind of spec: its members are of its workload
            return _sweep(spec, writer)
        if job.kind == "seeds" and isinstance(spec, ExperimentSpec):
            return _seeds(job, spec, writer, watcher)
        return _run(job, spec, writer, watcher)
    except KeyboardInterrupt:
        return "cancelled", None, None
    except Exception as error:
        return "failed", describe_error(error), None


def _run(
    job: Any, spec: ExperimentSpec | LMExperimentSpec, writer: EventWriter, watcher: Watcher
) -> tuple[str, str | None, dict[str, Any] | None]:
    """A run of the spec's workload; one that was interrupted continues from its checkpoint
    where the workload keeps them (gymnasium runs), else starts over (LM runs)."""
    from ppo_platform.tracking.tags import JOB_ID, JOB_OWNER

    workload = workload_of(spec)
    result = None
    if job.mlflow_run_id and workload.resume is not None:  # continue the same MLflow run
        try:
            result = workload.resume(job.mlflow_run_id, on_progress=writer, cancel=watcher.cancel)
        except RunNotFoundError as error:
            writer.store.append_event(job.id, "log", {"message": f"starting over: {error}"})
    if result is None:
        result = run_experiment(
            spec,
            on_progress=writer,
            cancel=watcher.cancel,
            tags={JOB_ID: job.id, JOB_OWNER: job.owner},
        )
    return _finished(job, result, writer, workload.spec.planned(spec))


def _finished(
    job: Any, result: Any, writer: EventWriter, total: int
) -> tuple[str, str | None, dict[str, Any] | None]:
    """The job's status, error and summary from a run's result, recorded in the store."""
    summary = {
        "outcome": result.outcome,
        "run_id": result.run_id,
        "timesteps": result.timesteps,
        "final_eval_mean": result.final_eval_mean,
        "final_eval_std": result.final_eval_std,
        "alerts": result.alerts,
        "seconds": round(result.seconds, 3),
    }
    writer.store.update(
        job.id,
        mlflow_run_id=result.run_id,
        mlflow_run_ids=[result.run_id],
        progress={"timesteps": result.timesteps, "total_timesteps": total},
    )
    if result.outcome == "completed":
        return "succeeded", None, summary
    if result.outcome == "cancelled":
        return "cancelled", None, summary
    return "failed", result.message, summary


def _seeds(
    job: Any, spec: ExperimentSpec, writer: EventWriter, watcher: Watcher
) -> tuple[str, str | None, dict[str, Any]]:
    """A batch of seeds (budget.seeds), each a run under one parent; a job interrupted before
    it ended continues the same batch (`resume_many`: each unfinished seed from its last
    checkpoint), one that started no seed's run starts over."""
    from ppo_platform.spec.rules import trained_steps
    from ppo_platform.tracking.tags import JOB_ID, JOB_OWNER
    from ppo_platform.workloads.seeds import resume_many, run_many

    assert spec.budget.seeds is not None
    progress = writer.seeds(len(spec.budget.seeds), trained_steps(spec))
    outcome = None
    if job.mlflow_run_id:
        try:
            outcome = resume_many(job.mlflow_run_id, progress_for=progress, cancel=watcher.cancel)
        except RunNotFoundError as error:
            writer.store.append_event(job.id, "log", {"message": f"starting over: {error}"})
    if outcome is None:
        outcome = run_many(
            spec,
            spec.budget.seeds,
            on_parent=progress.parent,
            progress_for=progress,
            cancel=watcher.cancel,
            tags={JOB_ID: job.id, JOB_OWNER: job.owner},
        )
    summary = _batch_summary(spec.name, outcome)
    writer.store.update(
        job.id,
        mlflow_run_id=outcome.parent_run_id,
        mlflow_run_ids=[r["run_id"] for r in summary["runs"] if r["run_id"]],
        progress=progress.progress(),
    )
    if outcome.failures:
        why = f"{len(outcome.failures)} of {len(spec.budget.seeds)} seeds failed"
        return "failed", why, summary
    return ("cancelled" if outcome.status == "KILLED" else "succeeded"), None, summary


def _batch_summary(name: str, outcome: Any) -> dict[str, Any]:
    """A batch's result as a sweep's: its parent run and each seed's run."""
    from ppo_platform.tracking.remote import member_name

    runs = [
        {
            "name": member_name(name, seed),
            "status": result.outcome,
            "run_id": result.run_id,
            "final_eval_mean": result.final_eval_mean,
            "error": None,
        }
        for seed, result in outcome.results.items()
    ]
    runs += [
        {
            "name": member_name(name, seed),
            "status": "failed",
            "run_id": None,
            "final_eval_mean": None,
            "error": why,
        }
        for seed, why in outcome.failures.items()
    ]
    return {"parent_run_id": outcome.parent_run_id, "runs": runs, "failed": len(outcome.failures)}


def _sweep(
    spec: ExperimentSpec | LMExperimentSpec, writer: EventWriter
) -> tuple[str, str | None, dict[str, Any]]:
    from ppo_platform.sweeps import run_sweep
    from ppo_platform.sweeps.expand import expand_sweep
    from ppo_platform.tracking.tags import JOB_ID, JOB_OWNER

    # Member events move runs_done on as members finish.
    total = len(expand_sweep(spec, from_outside=True))
    writer.store.update(writer.job_id, progress={"runs_done": 0, "runs_total": total})
    job = writer.store.get(writer.job_id)
    lineage = {JOB_OWNER: job.owner, JOB_ID: job.id}  # only this job's own parent is resumed
    result = run_sweep(
        spec, on_event=writer.sweep_event, report=True, lineage=lineage, from_outside=True
    )
    runs = [
        {
            "name": o.member.spec.name,
            "status": o.status,
            "run_id": o.run_id,
            "final_eval_mean": o.final_eval_mean,
            "error": o.error,
        }
        for o in result.outcomes
    ]
    writer.store.update(
        writer.job_id,
        mlflow_run_id=result.parent_run_id,
        mlflow_run_ids=[r["run_id"] for r in runs if r["run_id"]],
        progress={"runs_done": len(runs), "runs_total": len(runs)},
    )
    summary = {"parent_run_id": result.parent_run_id, "runs": runs, "failed": len(result.failed)}
    if result.failed:
        return "failed", f"{len(result.failed)} of {len(runs)} sweep runs failed", summary
    return "succeeded", None, summary


def _tune(
    store: JobStore, job_id: str, spec: ExperimentSpec | LMExperimentSpec
) -> tuple[str, str | None, dict[str, Any]]:
    from ppo_platform.tuning import run_study
    from ppo_platform.tuning.study import default_storage_url

    settings = get_settings()
    # One study per job, named after it: a re-queued job continues its own study.
    result = run_study(
        spec,
        workers=1,
        storage=default_storage_url(settings),
        study_name=f"{spec.name}-{job_id[:8]}",
        out_dir=job_folder(settings, job_id),
        live=False,
        on_event=EventWriter(store, job_id).study_event,
        from_outside=True,  # every trial is checked under the rules its spec was submitted by
    )
    outputs = result.outputs
    store.update(job_id, mlflow_run_id=result.parent_run_id)
    summary = {
        "parent_run_id": result.parent_run_id,
        "study_name": result.study_name,
        "best_trial": outputs.best_trial,
        "best_value": outputs.best_value,
        "best_spec": outputs.best_spec.read_text(),
    }
    return "succeeded", None, summary
