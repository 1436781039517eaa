"""Rows of the job store -> public bodies (the typed models of `ppo_platform.public`).

The one write here, `submit_rendered`, runs in an intake worker: it stores the submission and
returns its body already rendered (see docs/design/glossary.md, "present").
"""

from __future__ import annotations

from typing import Any

from api.schemas import EventPublic, ExperimentLinks, ExperimentPublic
from ppo_platform.jobs import Event, Experiment
from ppo_platform.jobs.intake_pool import submit_spec
from ppo_platform.public import (
    Diagnostics,
    Result,
    RunResultPublic,
    SweepResultPublic,
    TuneResultPublic,
    as_utc,
    event_from,
    progress_of,
)

RESULTS: dict[str, type[RunResultPublic | SweepResultPublic | TuneResultPublic]] = {
    "run": RunResultPublic,
    "sweep": SweepResultPublic,
    "tune": TuneResultPublic,
}


def result_of(kind: str, data: dict[str, Any] | None) -> Result | None:
    """The typed result of a finished experiment (None before it ends, or if it ended
    without one: e.g. it failed before training started)."""
    return RESULTS[kind].model_validate(data) if data else None


def experiment_public(job: Experiment) -> ExperimentPublic:
    base = f"/v1/experiments/{job.id}"
    return ExperimentPublic(
        id=job.id,
        kind=job.kind,  # type: ignore[arg-type]
        status=job.status,  # type: ignore[arg-type]
        name=job.name,
        spec_hash=job.spec_hash,
        total_timesteps=job.total_timesteps,
        created_at=as_utc(job.created_at),
        started_at=job.started_at and as_utc(job.started_at),
        finished_at=job.finished_at and as_utc(job.finished_at),
        progress=progress_of(job.progress),
        diagnostics=Diagnostics.model_validate(job.diagnostics or {}),
        alerts=job.alerts,
        mlflow_run_id=job.mlflow_run_id,
        mlflow_run_ids=list(job.mlflow_run_ids or []),
        result=result_of(job.kind, job.result),
        resolved=job.resolved or None,
        error=job.error,
        cancel_requested=job.cancel_requested,
        attempts=job.attempts,
        links=ExperimentLinks(
            experiment=base,
            events=f"{base}/events",
            alerts=f"{base}/alerts",
            artifacts=f"{base}/artifacts",
            metrics=f"{base}/metrics",
            cancel=f"{base}/cancel",
        ),
    )


def experiment_json(job: Experiment) -> bytes:
    """The status body as served (cached by StatusSnapshots)."""
    return experiment_public(job).model_dump_json().encode()


def submit_rendered(
    database_url: str,
    owner: str,
    text: str,
    idempotency_key: str | None,
    max_env_steps: int,
    max_queued: int,
) -> tuple[str, bytes, bool]:
    """`submit_spec`, run in an intake worker, answered as (id, JSON body, created): the worker
    renders the body, so the API process neither unpickles a row nor builds its model."""
    row, created = submit_spec(
        database_url, owner, text, idempotency_key, max_env_steps, max_queued
    )
    return row.id, experiment_json(row), created


def event_public(event: Event) -> EventPublic:
    return event_from(event.id, event.kind, event.data, as_utc(event.created_at))
