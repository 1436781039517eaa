"""Who the browser is, for the pages: the session cookie -> server-side session -> owner (the
same keys as the REST API open a session; a revoked key ends it). The /v1 routes take the same
cookie through `ppo_platform.api.deps.OwnerDep`; this module only adds the pages' redirect to the
login form.

Pages without a valid session redirect to the login form (`LoginRequired`); the dashboard's
JSON and SSE routes answer 401. State-changing requests must come from this origin and carry
the session's CSRF token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated
from urllib.parse import parse_qs

from fastapi import Depends, HTTPException, Request

from ppo_platform.api.deps import SessionDep, charge_writes
from ppo_platform.api.session import check_csrf
from ppo_platform.jobs.web_sessions import OpenSession

MAX_FORM_BYTES = 64 * 1024  # the largest form is the plan page's spec, a few kB


class LoginRequired(Exception):
    """A page was asked for without a valid session: send the browser to the login form."""


@dataclass(frozen=True)
class Viewer:
    """A signed-in browser: the key's owner and its session."""

    owner: str
    session: OpenSession


async def _viewer(request: Request, session: SessionDep) -> Viewer | None:
    if session is None:
        return None
    charge_writes(request, session.owner)  # the same per-key write rate as the REST API
    return Viewer(session.owner, session)


async def page_viewer(viewer: Annotated[Viewer | None, Depends(_viewer)]) -> Viewer:
    if viewer is None:
        raise LoginRequired()
    return viewer


async def ui_viewer(viewer: Annotated[Viewer | None, Depends(_viewer)]) -> Viewer:
    if viewer is None:
        raise HTTPException(401, "sign in to the dashboard first (/login).")
    return viewer


PageViewer = Annotated[Viewer, Depends(page_viewer)]
UiViewer = Annotated[Viewer, Depends(ui_viewer)]


def check_viewer_csrf(request: Request, secret: bytes, viewer: Viewer, token: str | None) -> None:
    """`ppo_platform.api.session.check_csrf` for a signed-in page's form (`token`) or script
    (header)."""
    check_csrf(request, secret, viewer.session, token)


async def read_form(request: Request) -> dict[str, str]:
    """An urlencoded form's fields (the first value of each); no multipart parser needed. A
    body over MAX_FORM_BYTES is refused (413) before more of it is read."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_FORM_BYTES:
        raise _form_too_large()
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_FORM_BYTES:
            raise _form_too_large()
        chunks.append(chunk)
    body = b"".join(chunks).decode("utf-8", "replace")
    return {name: values[0] for name, values in parse_qs(body).items()}


def _form_too_large() -> HTTPException:
    return HTTPException(413, f"the form is over the limit of {MAX_FORM_BYTES} bytes.")
