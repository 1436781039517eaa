"""Dependencies as `Annotated` aliases: the store, the settings, and the caller's identity."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ppo_platform.jobs import JobStore, ServiceSettings
from ppo_platform.jobs.keys import authenticate
from ppo_platform.settings import Settings

bearer = HTTPBearer(auto_error=False, description="An API key from `ppo-platform keys create`.")


def get_store(request: Request) -> JobStore:
    store: JobStore = request.app.state.store
    return store


def get_service(request: Request) -> ServiceSettings:
    service: ServiceSettings = request.app.state.service
    return service


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


StoreDep = Annotated[JobStore, Depends(get_store)]
ServiceDep = Annotated[ServiceSettings, Depends(get_service)]
SettingsDep = Annotated[Settings, Depends(get_settings)]


def get_owner(
    store: StoreDep,
    service: ServiceDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> str:
    """The name of the caller's API key; 401 without a key or with an unknown one."""
    if credentials is None:
        raise HTTPException(401, "an API key is required: send `Authorization: Bearer <key>`.")
    owner = authenticate(store, credentials.credentials, service.api_keys)
    if owner is None:
        raise HTTPException(401, "unknown or revoked API key.")
    return owner


OwnerDep = Annotated[str, Depends(get_owner)]
