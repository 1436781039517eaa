"""Submit, list, read and cancel experiments."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from api.deps import OwnerDep, ServiceDep, StoreDep
from api.errors import ERROR_RESPONSES
from api.present import experiment_public
from api.schemas import ExperimentList, ExperimentPublic
from api.spec_body import SPEC_BODY, read_spec_text
from ppo_platform.jobs import prepare_submission

router = APIRouter(prefix="/v1/experiments", tags=["experiments"], responses=ERROR_RESPONSES)
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        max_length=128,
        description="A retried submission with the same key returns the first experiment.",
    ),
]


@router.post(
    "",
    status_code=202,
    response_model=ExperimentPublic,
    openapi_extra=SPEC_BODY,
    responses={200: {"model": ExperimentPublic, "description": "Known Idempotency-Key."}},
)
async def submit_experiment(
    request: Request,
    owner: OwnerDep,
    store: StoreDep,
    service: ServiceDep,
    idempotency_key: IdempotencyKey = None,
) -> Any:
    """Queue a spec (run, sweep or tune, from its sections): 202 with its id and links."""
    text = await read_spec_text(request)

    def submit() -> tuple[Any, bool]:
        job = prepare_submission(text, service.max_env_steps)
        return store.submit(owner, job, idempotency_key, service.max_queued)

    row, created = await run_in_threadpool(submit)
    body = experiment_public(row).model_dump(mode="json")
    headers = {"Location": f"/v1/experiments/{row.id}"}
    return JSONResponse(body, status_code=202 if created else 200, headers=headers)


@router.get("", response_model=ExperimentList)
def list_experiments(
    owner: OwnerDep,
    store: StoreDep,
    status: Literal["queued", "running", "succeeded", "failed", "cancelled"] | None = None,
    kind: Literal["run", "sweep", "tune"] | None = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[str | None, Query(pattern=r"^[0-9]{1,12}$")] = None,
) -> ExperimentList:
    """Your experiments, newest first; `next_cursor` pages on."""
    rows, following = store.page(
        owner,
        status=status,
        kind=kind,
        limit=limit,
        cursor=int(cursor) if cursor else None,
    )
    return ExperimentList(
        items=[experiment_public(r) for r in rows],
        next_cursor=None if following is None else str(following),
    )


@router.get("/{experiment_id}", response_model=ExperimentPublic)
async def get_experiment(experiment_id: str, owner: OwnerDep, store: StoreDep) -> Any:
    """Status, progress, diagnostics, alert count, MLflow ids, and the result or error."""
    # The hot path of clients that poll: one trip to a thread for the query, and the body
    # serialised once (returning a Response skips FastAPI's second validation of the model).
    row = await run_in_threadpool(store.get, experiment_id, owner)
    return JSONResponse(experiment_public(row).model_dump(mode="json"))


@router.post("/{experiment_id}/cancel", response_model=ExperimentPublic, status_code=202)
def cancel_experiment(experiment_id: str, owner: OwnerDep, store: StoreDep) -> ExperimentPublic:
    """Cancel: a queued experiment never starts; a running one stops within seconds."""
    return experiment_public(store.cancel(experiment_id, owner))
