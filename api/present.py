"""Rows of the job store -> public bodies (the typed models of `ppo_platform.public`).

The one write here, `submit_rendered`, runs in an intake worker: it stores the submission and
returns its body already rendered (see docs/design/glossary.md, "present").
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

from ppo_platform.api.schemas import EventPublic, ExperimentLinks, ExperimentPublic
from ppo_platform.jobs import Event, Experiment
from ppo_platform.jobs.intake import prepare_submission
from ppo_platform.jobs.intake_pool import queue_submission
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
    "seeds": SweepResultPublic,
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


class Rendered(NamedTuple):
    """A submission as the intake worker answers it, with its clock (`time.monotonic()`, one
    clock for every process of the machine) at its start and after each phase."""

    experiment_id: str
    body: bytes
    created: bool
    clock: tuple[float, float, float, float]  # started, validated, stored, rendered


def submit_rendered(
    database_url: str,
    owner: str,
    text: str,
    idempotency_key: str | None,
    max_env_steps: int,
    max_queued: int,
) -> Rendered:
    """`submit_spec`, run in an intake worker, answered with the JSON body: the worker renders
    it, so the API process neither unpickles a row nor builds its model."""
    started = time.monotonic()
    job = prepare_submission(text, max_env_steps)
    validated = time.monotonic()
    row, created = queue_submission(database_url, owner, job, idempotency_key, max_queued)
    stored = time.monotonic()
    body = experiment_json(row)
    return Rendered(row.id, body, created, (started, validated, stored, time.monotonic()))


def server_timing(received: float, sent: float, rendered: Rendered, answered: float) -> str:
    """The `Server-Timing` header of a submission: where its time went in the server, in ms
    (read the body, wait for an intake worker, validate, store, render, hand the answer back)."""
    started, validated, stored, done = rendered.clock
    phases = {
        "body": sent - received,
        "intake-wait": started - sent,
        "validate": validated - started,
        "store": stored - validated,
        "render": done - stored,
        "answer": answered - done,
        "total": answered - received,
    }
    return ", ".join(f"{name};dur={seconds * 1000:.2f}" for name, seconds in phases.items())


def event_public(event: Event) -> EventPublic:
    return event_from(event.id, event.kind, event.data, as_utc(event.created_at))
