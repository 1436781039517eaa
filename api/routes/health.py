"""Liveness and readiness: no API key needed."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from ppo_platform.api.deps import SettingsDep
from ppo_platform.api.schemas import HealthPublic, ReadyPublic
from ppo_platform.errors import PlatformError
from ppo_platform.jobs.readiness import http_answers, other_stores
from ppo_platform.tracking.gateway import SQLITE_PREFIX

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=HealthPublic)
def healthz() -> HealthPublic:
    """The process is up."""
    return HealthPublic()


@router.get("/readyz", response_model=ReadyPublic, responses={503: {"model": ReadyPublic}})
def readyz(request: Request, settings: SettingsDep) -> JSONResponse:
    """Each store answers (job, tracking, Optuna; Ray when used); jobs are dispatched (503
    while the job service is still opening)."""
    services = request.app.state.opener.opened()
    job_store = services is not None
    try:
        if services is not None:
            services.store.ping()
    except PlatformError:
        job_store = False
    tracking = tracking_store_answers(settings.tracking_uri)
    dispatcher = services is not None and services.dispatcher.dispatching()
    stores = {"job_store": job_store, "tracking_store": tracking, **other_stores(settings)}
    if "ray_cluster" in stores:  # it answers, and the dispatcher can collect results from it
        collecting = services is not None and services.dispatcher.executor.health() is None
        stores["ray_cluster"] = stores["ray_cluster"] and collecting
    ready = all(stores.values()) and dispatcher  # no dispatcher: submissions would never run
    body = ReadyPublic(
        status="ready" if ready else "unavailable",
        job_store=job_store,
        tracking_store=tracking,
        dispatcher=dispatcher,
        stores=stores,
    )
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)


def tracking_store_answers(uri: str) -> bool:
    """Without importing MLflow: a SQLite store answers a read-only query, or, before the first
    run creates it, its folder is writable. A server or other database is trusted to the first
    run (MLflow retries by itself); a tracking server answers its /health route."""
    if uri.startswith(("http://", "https://")):
        return http_answers(uri)
    if not uri.startswith(SQLITE_PREFIX):
        return True
    path = Path(uri.removeprefix(SQLITE_PREFIX)).resolve()
    if not path.exists():
        return os.access(path.parent, os.W_OK)
    try:
        with contextlib.closing(
            sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=1.0)
        ) as database:
            database.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error:
        return False
    return True
