"""Does each store the service depends on answer? For `/readyz`: cheap, bounded, no MLflow,
Optuna or Ray import (the API process stays light)."""

from __future__ import annotations

import urllib.error
import urllib.request
from functools import lru_cache
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from ppo_platform.execution.ray_executor import address_answers
from ppo_platform.settings import JOURNAL_SCHEME, Settings

TIMEOUT_SECONDS = 2.0


def http_answers(uri: str) -> bool:
    """An MLflow tracking server answers its /health route."""
    try:
        with urllib.request.urlopen(f"{uri.rstrip('/')}/health", timeout=TIMEOUT_SECONDS) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


@lru_cache(maxsize=8)
def _engine(url: str) -> Any:
    args = {"connect_timeout": int(TIMEOUT_SECONDS)} if url.startswith("postgresql") else {}
    return create_engine(url, pool_pre_ping=True, connect_args=args)


def database_answers(url: str) -> bool:
    """A SQLAlchemy database answers `SELECT 1` (a journal file: its folder is writable)."""
    if url.startswith(JOURNAL_SCHEME):
        folder = Path(url.removeprefix(JOURNAL_SCHEME).removeprefix("//")).parent
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        return folder.is_dir()
    try:
        make_url(url)
        with _engine(url).connect() as connection:
            connection.execute(text("SELECT 1"))
    except (SQLAlchemyError, ValueError, ImportError):
        return False
    return True


def optuna_storage(settings: Settings) -> str:
    """The Optuna storage studies use (`Settings.optuna_storage`, as the tuner derives it)."""
    return settings.optuna_storage


def other_stores(settings: Settings) -> dict[str, bool]:
    """Optuna storage and, with the Ray executor, the Ray cluster (the job store and the
    tracking store are checked by the caller)."""
    found = {"optuna_store": database_answers(optuna_storage(settings))}
    if settings.executor == "ray":
        found["ray_cluster"] = bool(settings.ray_address) and address_answers(
            settings.ray_address or "", TIMEOUT_SECONDS
        )
    return found
