"""Dependencies as `Annotated` aliases: the store, the settings, and the caller's identity.

They are `async def` so FastAPI calls them on the event loop instead of handing each to the
thread pool; only a key lookup that misses the key cache goes to a thread (it queries the store).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from api.key_limits import READ_METHODS
from api.services import ServiceOpener, Services
from ppo_platform.jobs import JobStore, ServiceSettings
from ppo_platform.jobs.intake_pool import IntakePool
from ppo_platform.jobs.keys import KeyCache, settings_owner, stored_owner
from ppo_platform.jobs.snapshots import StatusSnapshots
from ppo_platform.settings import Settings

bearer = HTTPBearer(auto_error=False, description="An API key from `ppo-platform keys create`.")


async def get_services(request: Request) -> Services:
    """The job service's parts, once open (a request in the first second waits for them)."""
    opener: ServiceOpener = request.app.state.opener
    return opener.opened() or await opener.wait()


ServicesDep = Annotated[Services, Depends(get_services)]


async def get_store(services: ServicesDep) -> JobStore:
    return services.store


async def get_snapshots(services: ServicesDep) -> StatusSnapshots[bytes]:
    return services.snapshots


async def get_intake(services: ServicesDep) -> IntakePool:
    return services.intake


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


async def get_owner(
    request: Request,
    store: StoreDep,
    service: ServiceDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> str:
    """The name of the caller's API key; 401 without a key or with an unknown one."""
    if credentials is None:
        raise HTTPException(401, "an API key is required: send `Authorization: Bearer <key>`.")
    key = credentials.credentials
    owner = settings_owner(key, service.api_keys)
    if owner is None:
        cache: KeyCache = request.app.state.key_cache
        owner = cache.get_key(key) or await run_in_threadpool(stored_owner, store, key, cache)
    if owner is None:
        raise HTTPException(401, "unknown or revoked API key.")
    if request.method not in READ_METHODS:  # writes cost a worker's time: rate-limited per key
        request.app.state.rate_limiter.charge(owner)
    return owner


OwnerDep = Annotated[str, Depends(get_owner)]
