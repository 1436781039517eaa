"""The dashboard's own JSON, SSE and form routes under /ui: the REST routes' handlers, called
with the owner of the session cookie instead of a bearer key (and a CSRF check on writes)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Request
from fastapi.responses import RedirectResponse, Response, StreamingResponse

from api.dashboard.auth import SecretDep, UiViewer, check_csrf, read_form
from api.deps import IntakeDep, ServiceDep, SettingsDep, StoreDep
from api.routes import artifacts, events, experiments, specs, trained_model
from ppo_platform.errors import IssueError

router = APIRouter(prefix="/ui", include_in_schema=False)


@router.post("/specs/validate")
async def validate(request: Request, viewer: UiViewer, intake: IntakeDep, secret: SecretDep) -> Any:
    """As POST /v1/specs/validate, but a spec with issues is a 200 `{"valid": false, issues}`:
    a refusal is the answer the page asks for, not a failed request (no console error)."""
    check_csrf(request, secret, viewer, None)
    try:
        checked = await specs.validate_spec(request, viewer.owner, intake)
    except IssueError as error:
        message = f"{len(error.issues)} issue(s)"
        return {"valid": False, "message": message, "issues": error.to_dict()}
    return {"valid": True, **checked.model_dump(mode="json")}


@router.post("/experiments")
async def submit(
    request: Request,
    viewer: UiViewer,
    store: StoreDep,
    service: ServiceDep,
    intake: IntakeDep,
    secret: SecretDep,
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key", max_length=128)] = None,
) -> Any:
    """As POST /v1/experiments."""
    check_csrf(request, secret, viewer, None)
    return await experiments.submit_experiment(
        request, viewer.owner, store, service, intake, idempotency_key
    )


@router.post("/experiments/{experiment_id}/cancel")
async def cancel(
    experiment_id: str, request: Request, viewer: UiViewer, store: StoreDep, secret: SecretDep
) -> Response:
    """The cancel button (a form): cancel, then back to the experiment's page."""
    check_csrf(request, secret, viewer, (await read_form(request)).get("csrf_token"))
    experiments.cancel_experiment(experiment_id, viewer.owner, store)
    return RedirectResponse(f"/experiments/{experiment_id}", status_code=303)


@router.get("/experiments/{experiment_id}/events")
def stream(
    experiment_id: str,
    request: Request,
    viewer: UiViewer,
    store: StoreDep,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> StreamingResponse:
    """As GET /v1/experiments/{id}/events (EventSource sends the cookie, not a bearer key)."""
    return events.stream_events(experiment_id, request, viewer.owner, store, last_event_id or "")


@router.get("/experiments/{experiment_id}/artifacts/{name}")
def download(
    experiment_id: str,
    name: str,
    viewer: UiViewer,
    store: StoreDep,
    settings: SettingsDep,
    service: ServiceDep,
) -> Response:
    """As GET /v1/experiments/{id}/artifacts/{name}: one listed file."""
    return artifacts.download_artifact(experiment_id, name, viewer.owner, store, settings, service)


@router.get("/experiments/{experiment_id}/model/{file}")
def download_model(
    experiment_id: str,
    file: trained_model.ModelFile,
    viewer: UiViewer,
    store: StoreDep,
    settings: SettingsDep,
    service: ServiceDep,
) -> Response:
    """As GET /v1/experiments/{id}/model/{file}: the trained model or its statistics."""
    return trained_model.download_model(experiment_id, file, viewer.owner, store, settings, service)
