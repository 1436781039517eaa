"""What happens to an experiment: the live event stream (SSE), its alerts, metric histories."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from ppo_platform.api.deps import OwnerDep, SettingsDep, StoreDep
from ppo_platform.api.errors import ERROR_RESPONSES, error_responses
from ppo_platform.api.present import event_public
from ppo_platform.api.schemas import EventList, ExperimentId, MetricHistory, MetricList, MetricPoint
from ppo_platform.errors import BadInputError, NotFoundError, SpecIssue
from ppo_platform.jobs import TERMINAL, JobStore
from ppo_platform.jobs.models import EVENT_KINDS
from ppo_platform.public.events import EVENT_ADAPTER

router = APIRouter(prefix="/v1/experiments", tags=["events"], responses=ERROR_RESPONSES)
# One SSE frame, as OpenAPI 3.1 describes the events of a stream: `data` holds an event as
# JSON (one of the event schemas, by `kind`).
SSE_FRAME = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "description": "The event id: resume after it (Last-Event-ID)."},
        "event": {"type": "string", "enum": list(EVENT_KINDS)},
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "contentSchema": {
                key: value
                for key, value in EVENT_ADAPTER.json_schema(
                    ref_template="#/components/schemas/{model}"
                ).items()
                if key != "$defs"
            },
        },
    },
    "required": ["id", "event", "data"],
}
POLL_SECONDS = 0.5
KEEPALIVE_SECONDS = 15.0
METRIC_KEY = r"^[A-Za-z0-9_./ -]{1,250}$"
EVENT_ID = re.compile(r"[0-9]{1,18}")  # an event row id: fits the database's 64-bit integer


def event_id_after(last_event_id: str | None) -> int:
    """The event id a stream resumes after (0: from the start); 422 for anything but an id."""
    if not last_event_id:
        return 0
    if not EVENT_ID.fullmatch(last_event_id):
        issue = SpecIssue(
            "Last-Event-ID",
            "is not an event id (1 to 18 ASCII digits).",
            last_event_id[:40],
            fix="send the `id:` of the last event received, or no Last-Event-ID header.",
        )
        raise BadInputError([issue])
    return int(last_event_id)


def _frame(event: Any) -> str:
    data = json.dumps(event_public(event).model_dump(mode="json"), separators=(",", ":"))
    return f"id: {event.id}\nevent: {event.kind}\ndata: {data}\n\n"


async def _stream(request: Request, store: JobStore, job_id: str, last: int) -> AsyncIterator[str]:
    """Events after `last` as they are written; ends after the final status event."""
    idle = 0.0
    while True:
        job = await run_in_threadpool(store.get, job_id)
        events = await run_in_threadpool(store.events_after, job_id, last)
        for event in events:
            yield _frame(event)
            last = event.id
        if events:
            idle = 0.0
            continue
        if job.status in TERMINAL or await request.is_disconnected():
            return
        await asyncio.sleep(POLL_SECONDS)
        idle += POLL_SECONDS
        if idle >= KEEPALIVE_SECONDS:
            idle = 0.0
            yield ": keep-alive\n\n"


@router.get(
    "/{experiment_id}/events",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "One SSE frame per event: `id:` the event id, `event:` its kind, "
            "`data:` the event as JSON (an `Event`).",
            "content": {"text/event-stream": {"schema": SSE_FRAME}},
        },
        **error_responses(404, 422, 429),
    },
)
def stream_events(
    experiment_id: ExperimentId,
    request: Request,
    owner: OwnerDep,
    store: StoreDep,
    last_event_id: Annotated[
        str,
        Header(
            alias="Last-Event-ID",
            description="Resume after this event id (reconnects); empty: from the start.",
            # Documented here, checked by event_id_after (its 422 names the header).
            json_schema_extra={"pattern": f"^(|{EVENT_ID.pattern})$"},
        ),
    ] = "",
) -> StreamingResponse:
    """Server-Sent Events: progress, evals, alerts and status changes; `id:` is the event id."""
    last = event_id_after(last_event_id)
    store.get(experiment_id, owner)  # 404 before the stream starts
    stream = _stream(request, store, experiment_id, last)
    request.app.state.stream_slots.hold(owner, stream)  # 429 past the key's open streams
    return StreamingResponse(
        stream,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@router.get(
    "/{experiment_id}/alerts", response_model=EventList, responses=error_responses(404, 422)
)
def list_alerts(experiment_id: ExperimentId, owner: OwnerDep, store: StoreDep) -> EventList:
    """The diagnostics alerts raised so far, oldest first."""
    store.get(experiment_id, owner)
    events = store.events_after(experiment_id, kinds=["alert"], limit=10_000)
    return EventList(items=[event_public(e) for e in events])


@router.get(
    "/{experiment_id}/metrics", response_model=MetricList, responses=error_responses(404, 422)
)
def list_metrics(
    experiment_id: ExperimentId, owner: OwnerDep, store: StoreDep, settings: SettingsDep
) -> MetricList:
    """The metric keys the experiment's MLflow run has logged (none before it has a run)."""
    run_id = store.get(experiment_id, owner).mlflow_run_id
    if not run_id:
        return MetricList(run_id=None, keys=[])
    from ppo_platform.tracking.reads import stored_metric_keys  # MLflow: on first use only

    return MetricList(run_id=run_id, keys=stored_metric_keys(settings.tracking_uri, run_id))


@router.get(
    "/{experiment_id}/metrics/history",
    response_model=MetricHistory,
    responses=error_responses(404, 422),
)
def get_metric_history(
    experiment_id: ExperimentId,
    owner: OwnerDep,
    store: StoreDep,
    settings: SettingsDep,
    key: Annotated[str, Query(pattern=METRIC_KEY, description="e.g. eval/mean_reward")],
) -> MetricHistory:
    """A metric's history from the experiment's MLflow run; 404 for a key it has not logged."""
    run_id = store.get(experiment_id, owner).mlflow_run_id
    if not run_id:
        raise NotFoundError(f"experiment {experiment_id} has no MLflow run yet, so no {key!r}.")
    from ppo_platform.tracking.reads import stored_history, stored_metric_keys  # MLflow: now

    if key not in stored_metric_keys(settings.tracking_uri, run_id):
        raise NotFoundError(
            f"experiment {experiment_id} has no metric {key!r} (yet); GET "
            f"/v1/experiments/{experiment_id}/metrics lists its keys."
        )
    history = stored_history(settings.tracking_uri, run_id, key)
    points = [MetricPoint(step=s, value=v if v == v else None) for s, v in history]
    return MetricHistory(key=key, run_id=run_id, points=points)
