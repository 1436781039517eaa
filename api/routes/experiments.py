"""Submit, list, read and cancel experiments."""

from __future__ import annotations

import asyncio
import time
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from ppo_platform.api.deps import IntakeDep, OwnerDep, ServiceDep, SnapshotsDep, StoreDep
from ppo_platform.api.errors import ERROR_RESPONSES, error_responses
from ppo_platform.api.present import experiment_public, server_timing, submit_rendered
from ppo_platform.api.schemas import ExperimentId, ExperimentKind, ExperimentList, ExperimentPublic
from ppo_platform.api.schemas import ExperimentStatus as Status
from ppo_platform.api.spec_body import SPEC_BODY, read_spec_text

router = APIRouter(prefix="/v1/experiments", tags=["experiments"], responses=ERROR_RESPONSES)
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        max_length=128,
        description="A retried submission with the same key returns the first experiment.",
    ),
]

SUBMIT_HEADERS = {
    "Location": {"description": "The experiment's URL.", "schema": {"type": "string"}},
    "Server-Timing": {
        "description": "Where the submission's time went in the server, in milliseconds: "
        "body (reading it), intake-wait (for a free intake worker), validate, store (its one "
        "transaction), render, answer (back to the API process), total.",
        "schema": {"type": "string"},
    },
}


@router.post(
    "",
    status_code=202,
    response_model=ExperimentPublic,
    openapi_extra=SPEC_BODY,
    responses={
        200: {
            "model": ExperimentPublic,
            "description": "Known Idempotency-Key.",
            "headers": SUBMIT_HEADERS,
        },
        202: {
            "description": "Queued; `Location` names the experiment.",
            "headers": SUBMIT_HEADERS,
        },
        **error_responses(408, 413, 415, 422, 429),
    },
)
async def submit_experiment(
    request: Request,
    owner: OwnerDep,
    store: StoreDep,
    service: ServiceDep,
    intake: IntakeDep,
    idempotency_key: IdempotencyKey = None,
) -> Any:
    """Queue a spec (run, sweep or tune, from its sections): 202 with its id and links."""
    received = time.monotonic()
    text = await read_spec_text(request)
    sent = time.monotonic()
    # Read, validated and queued by an intake process (a slow spec holds up no other request).
    future = intake.submit(
        submit_rendered,
        store.url,
        owner,
        text,
        idempotency_key,
        service.max_env_steps,
        service.max_queued,
    )
    rendered = await asyncio.wrap_future(future)
    headers = {
        "Location": f"/v1/experiments/{rendered.experiment_id}",
        "Server-Timing": server_timing(received, sent, rendered, time.monotonic()),
    }
    return Response(
        rendered.body,
        status_code=202 if rendered.created else 200,
        headers=headers,
        media_type="application/json",
    )


@router.get("", response_model=ExperimentList, responses=error_responses(422))
def list_experiments(
    owner: OwnerDep,
    store: StoreDep,
    status: Status | None = None,
    kind: ExperimentKind | None = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[str | None, Query(pattern=r"^[0-9]{1,12}$")] = None,
) -> ExperimentList:
    """Your experiments, newest first; `next_cursor` pages on."""
    rows, following = store.page(
        owner,
        status=status and status.value,
        kind=kind and kind.value,
        limit=limit,
        cursor=int(cursor) if cursor else None,
    )
    return ExperimentList(
        items=[experiment_public(r) for r in rows],
        next_cursor=None if following is None else str(following),
    )


@router.get(
    "/{experiment_id}", response_model=ExperimentPublic, responses=error_responses(404, 422)
)
async def get_experiment(
    experiment_id: ExperimentId, owner: OwnerDep, snapshots: SnapshotsDep
) -> Any:
    """Status, progress, diagnostics, alert count, MLflow ids, and the result or error."""
    # The hot path of clients that poll: from memory on the event loop while the row is
    # unchanged (StatusSnapshots checks that against the store), else one thread trip.
    body = snapshots.lookup(experiment_id, owner)
    if body is None:
        body = await run_in_threadpool(snapshots.load, experiment_id, owner)
    return Response(body, media_type="application/json")


@router.post(
    "/{experiment_id}/cancel",
    response_model=ExperimentPublic,
    status_code=202,
    responses=error_responses(404, 409, 422, 429),
)
def cancel_experiment(
    experiment_id: ExperimentId, owner: OwnerDep, store: StoreDep
) -> ExperimentPublic:
    """Cancel: a queued experiment never starts; a running one stops within seconds."""
    return experiment_public(store.cancel(experiment_id, owner))
