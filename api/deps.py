"""Dependencies as `Annotated` aliases: the store, the settings, and the caller's identity.

`OwnerDep` is the one owner dependency: a bearer API key (scripts, the CLI) or the dashboard's
session cookie (pages), so pages and scripts use the same /v1 routes.

They are `async def` so FastAPI calls them on the event loop instead of handing each to the
thread pool; only a key lookup that misses the key cache goes to a thread (it queries the store).
Each takes the request alone (and `get_owner` the bearer scheme, for the OpenAPI document) and
calls what it needs as plain functions: FastAPI resolves every node of a route's dependency
tree anew on each request, and a tree of 13 nodes was over half of a status read's CPU (#38).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from ppo_platform.api.key_limits import READ_METHODS
from ppo_platform.api.services import ServiceOpener, Services
from ppo_platform.api.session import COOKIE, check_csrf, load_secret
from ppo_platform.jobs import JobStore, ServiceSettings
from ppo_platform.jobs.intake_pool import IntakePool
from ppo_platform.jobs.keys import KeyCache, settings_owner, stored_owner
from ppo_platform.jobs.snapshots import StatusSnapshots
from ppo_platform.jobs.web_sessions import OpenSession, find_session
from ppo_platform.settings import Settings

bearer = HTTPBearer(auto_error=False, description="An API key from `ppo-platform keys create`.")


async def get_services(request: Request) -> Services:
    """The job service's parts, once open (a request in the first second waits for them)."""
    opener: ServiceOpener = request.app.state.opener
    return opener.opened() or await opener.wait()


ServicesDep = Annotated[Services, Depends(get_services)]


async def get_store(request: Request) -> JobStore:
    return (await get_services(request)).store


async def get_snapshots(request: Request) -> StatusSnapshots[bytes]:
    return (await get_services(request)).snapshots


async def get_intake(request: Request) -> IntakePool:
    return (await get_services(request)).intake


async def get_service(request: Request) -> ServiceSettings:
    service: ServiceSettings = request.app.state.service
    return service


async def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


StoreDep = Annotated[JobStore, Depends(get_store)]
ServiceDep = Annotated[ServiceSettings, Depends(get_service)]
IntakeDep = Annotated[IntakePool, Depends(get_intake)]
SnapshotsDep = Annotated[StatusSnapshots[bytes], Depends(get_snapshots)]
SettingsDep = Annotated[Settings, Depends(get_settings)]


async def get_secret(request: Request) -> bytes:
    """The dashboard's CSRF secret (`api/session.py`), loaded once."""
    secret: bytes | None = getattr(request.app.state, "dashboard_secret", None)
    if secret is None:
        secret = load_secret(request.app.state.settings.ensure_home())
        request.app.state.dashboard_secret = secret
    return secret


SecretDep = Annotated[bytes, Depends(get_secret)]


async def owner_of_key(
    request: Request, store: JobStore, service: ServiceSettings, key: str
) -> str | None:
    """The owner of an API key (the settings' keys, else the store's, cached); None if unknown."""
    owner = settings_owner(key, service.api_keys)
    if owner is None:
        cache: KeyCache = request.app.state.key_cache
        owner = cache.get_key(key) or await run_in_threadpool(stored_owner, store, key, cache)
    return owner


async def session_of(request: Request) -> OpenSession | None:
    """The dashboard session the request's cookie names (None: no cookie, or one that is
    expired, logged out or whose key was revoked)."""
    cookie = request.cookies.get(COOKIE)
    if not cookie:
        return None
    store, service = await get_store(request), request.app.state.service
    return await run_in_threadpool(find_session, store, cookie, service.api_keys)


SessionDep = Annotated[OpenSession | None, Depends(session_of)]


def charge_writes(request: Request, owner: str) -> str:
    """Writes cost a worker's time: rate-limited per key, whichever way the caller signed in."""
    if request.method not in READ_METHODS:
        request.app.state.rate_limiter.charge(owner)
    return owner


async def get_owner(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> str:
    """The one owner dependency of every /v1 route: the owner of the bearer API key, else of
    the dashboard session cookie, whose writes must also come from this origin with the
    session's CSRF token (`X-CSRF-Token`). 401 with neither, or an unknown key."""
    if credentials is not None:
        service = request.app.state.service
        owner = await owner_of_key(
            request, await get_store(request), service, credentials.credentials
        )
        if owner is None:
            raise HTTPException(401, "unknown or revoked API key.")
        return charge_writes(request, owner)
    session = await session_of(request)
    if session is None:
        raise HTTPException(
            401,
            "an API key is required: send `Authorization: Bearer <key>` "
            "(or sign in to the dashboard at /login).",
        )
    if request.method not in READ_METHODS:  # the secret is read only for a cookie's write
        check_csrf(request, await get_secret(request), session, None)
    return charge_writes(request, session.owner)


OwnerDep = Annotated[str, Depends(get_owner)]
