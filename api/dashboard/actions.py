"""The two dashboard routes under /ui whose answers are the page's own, not the REST API's.

Everything else the pages' scripts call (submitting, the event stream, downloads) is the /v1
route itself, signed in by the session cookie (`ppo_platform.api.deps.OwnerDep`). These two stay:
the
editor's validation wants a spec with issues as a 200 answer (`{"valid": false, issues}`: a
refusal is the answer it asks for, so the browser logs no failed request), and the cancel
button is an HTML form that answers with a redirect back to the page.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from ppo_platform.api.dashboard.auth import UiViewer, check_viewer_csrf, read_form
from ppo_platform.api.deps import IntakeDep, SecretDep, StoreDep
from ppo_platform.api.routes import experiments, specs
from ppo_platform.errors import IssueError

router = APIRouter(prefix="/ui", include_in_schema=False)


@router.post("/specs/validate")
async def validate(request: Request, viewer: UiViewer, intake: IntakeDep, secret: SecretDep) -> Any:
    """As POST /v1/specs/validate, but a spec with issues is a 200 `{"valid": false, issues}`:
    a refusal is the answer the page asks for, not a failed request (no console error)."""
    check_viewer_csrf(request, secret, viewer, None)
    try:
        checked = await specs.validate_spec(request, viewer.owner, intake)
    except IssueError as error:
        message = f"{len(error.issues)} issue(s)"
        return {"valid": False, "message": message, "issues": error.to_dict()}
    return {"valid": True, **checked.model_dump(mode="json")}


@router.post("/experiments/{experiment_id}/cancel")
async def cancel(
    experiment_id: str, request: Request, viewer: UiViewer, store: StoreDep, secret: SecretDep
) -> Response:
    """The cancel button (a form): cancel, then back to the experiment's page."""
    check_viewer_csrf(request, secret, viewer, (await read_form(request)).get("csrf_token"))
    experiments.cancel_experiment(experiment_id, viewer.owner, store)
    return RedirectResponse(f"/experiments/{experiment_id}", status_code=303)
