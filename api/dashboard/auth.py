"""Who the browser is: the session cookie -> server-side session -> owner (the same keys as the
REST API open a session; a revoked key ends it).

Pages without a valid session redirect to the login form (`LoginRequired`); the dashboard's
JSON and SSE routes answer 401. State-changing requests must come from this origin and carry
the session's CSRF token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated
from urllib.parse import parse_qs, urlsplit

from fastapi import Depends, HTTPException, Request
from starlette.concurrency import run_in_threadpool

from api.dashboard.session import COOKIE, csrf_valid, load_secret
from api.deps import ServiceDep, SettingsDep, StoreDep
from api.key_limits import READ_METHODS
from ppo_platform.jobs import JobStore, ServiceSettings
from ppo_platform.jobs.keys import KeyCache, settings_owner, stored_owner
from ppo_platform.jobs.web_sessions import OpenSession, find_session

CSRF_HEADER = "X-CSRF-Token"
MAX_FORM_BYTES = 64 * 1024  # the largest form is the plan page's spec, a few kB


class LoginRequired(Exception):
    """A page was asked for without a valid session: send the browser to the login form."""


@dataclass(frozen=True)
class Viewer:
    """A signed-in browser: the key's owner and its session."""

    owner: str
    session: OpenSession


async def get_secret(request: Request, settings: SettingsDep) -> bytes:
    secret: bytes | None = getattr(request.app.state, "dashboard_secret", None)
    if secret is None:
        secret = load_secret(settings.ensure_home())
        request.app.state.dashboard_secret = secret
    return secret


SecretDep = Annotated[bytes, Depends(get_secret)]


async def owner_of_key(
    request: Request, store: JobStore, service: ServiceSettings, key: str
) -> str | None:
    """The owner of an API key, as the REST API's bearer check finds it; None if unknown."""
    owner = settings_owner(key, service.api_keys)
    if owner is None:
        cache: KeyCache = request.app.state.key_cache
        owner = cache.get_key(key) or await run_in_threadpool(stored_owner, store, key, cache)
    return owner


async def _viewer(request: Request, store: StoreDep, service: ServiceDep) -> Viewer | None:
    cookie = request.cookies.get(COOKIE)
    if not cookie:
        return None
    session = await run_in_threadpool(find_session, store, cookie, service.api_keys)
    if session is None:
        return None
    if request.method not in READ_METHODS:  # the same per-key write rate as the REST API
        request.app.state.rate_limiter.charge(session.owner)
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


def check_origin(request: Request) -> None:
    """A browser's POST names its origin: it must be this server (403 otherwise)."""
    origin = request.headers.get("origin")
    if origin is None:  # not a browser, or a same-origin GET
        return
    if urlsplit(origin).netloc != request.headers.get("host"):
        raise HTTPException(403, f"cross-origin request from {origin!r} refused.")


def check_csrf(request: Request, secret: bytes, viewer: Viewer, token: str | None) -> None:
    """403 unless the request comes from this origin with the session's CSRF token."""
    check_origin(request)
    if not csrf_valid(secret, viewer.session, token or request.headers.get(CSRF_HEADER)):
        raise HTTPException(403, "missing or wrong CSRF token: reload the page and retry.")


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
