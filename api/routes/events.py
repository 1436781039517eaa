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

from api.deps import OwnerDep, SettingsDep, StoreDep
from api.errors import ERROR_RESPONSES
from api.present import event_public
from api.schemas import EventList, MetricHistory, MetricPoint
from ppo_platform.errors import BadInputError, SpecIssue
from ppo_platform.jobs import TERMINAL, JobStore

router = APIRouter(prefix="/v1/experiments", tags=["events"], responses=ERROR_RESPONSES)
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
    responses={200: {"content": {"text/event-stream": {"schema": {"type": "string"}}}}},
)
def stream_events(
    experiment_id: str,
    request: Request,
    owner: OwnerDep,
    store: StoreDep,
    last_event_id: Annotated[
        str | None,
        Header(alias="Last-Event-ID", description="Resume after this event id (reconnects)."),
    ] = None,
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


@router.get("/{experiment_id}/alerts", response_model=EventList)
def list_alerts(experiment_id: str, owner: OwnerDep, store: StoreDep) -> EventList:
    """The diagnostics alerts raised so far, oldest first."""
    store.get(experiment_id, owner)
    events = store.events_after(experiment_id, kinds=["alert"], limit=10_000)
    return EventList(items=[event_public(e) for e in events])


@router.get("/{experiment_id}/metrics", response_model=MetricHistory)
def metric_history(
    experiment_id: str,
    owner: OwnerDep,
    store: StoreDep,
    settings: SettingsDep,
    key: Annotated[str, Query(pattern=METRIC_KEY, description="e.g. eval/mean_reward")],
) -> MetricHistory:
    """A metric's history from the experiment's MLflow run (empty before it has one)."""
    job = store.get(experiment_id, owner)
    run_id = job.mlflow_run_id
    if not run_id:
        return MetricHistory(key=key, run_id=None, points=[])
    from ppo_platform.tracking.reads import stored_history  # MLflow: on first use only

    history = stored_history(settings.tracking_uri, run_id, key)
    points = [MetricPoint(step=s, value=v if v == v else None) for s, v in history]
    return MetricHistory(key=key, run_id=run_id, points=points)
