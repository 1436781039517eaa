"""Liveness and readiness: no API key needed."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from api.deps import SettingsDep, StoreDep
from api.schemas import HealthPublic, ReadyPublic
from ppo_platform.errors import PlatformError

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=HealthPublic)
def healthz() -> HealthPublic:
    """The process is up."""
    return HealthPublic()


@router.get("/readyz", response_model=ReadyPublic, responses={503: {"model": ReadyPublic}})
def readyz(request: Request, store: StoreDep, settings: SettingsDep) -> JSONResponse:
    """The job store answers, the tracking store's database is reachable, jobs are dispatched."""
    try:
        store.ping()
        job_store = True
    except PlatformError:
        job_store = False
    tracking = _tracking_reachable(settings.tracking_uri, settings.home)
    dispatcher = request.app.state.dispatcher.active.is_set()
    ready = job_store and tracking
    body = ReadyPublic(
        status="ready" if ready else "unavailable",
        job_store=job_store,
        tracking_store=tracking,
        dispatcher=dispatcher,
    )
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)


def _tracking_reachable(uri: str, home: object) -> bool:
    """Without importing MLflow: a SQLite store's folder exists (the file is created on first
    use); a server or database URL is trusted to the first run (MLflow retries by itself)."""
    from pathlib import Path

    if uri.startswith("sqlite:///"):
        return Path(uri.removeprefix("sqlite:///")).parent.is_dir() or Path(str(home)).is_dir()
    return True
