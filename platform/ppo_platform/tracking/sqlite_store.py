"""Creating a SQLite MLflow store: once, under a file lock, from a migrated empty copy.

A fresh SQLite store runs every one of MLflow's schema migrations: seconds of CPU (over ten on
a busy machine), paid by every new platform home before its first run, and fatal when several
processes do it to one file at once. So the first process to touch a store that does not
exist creates it under a lock beside the database (`<db>.init.lock`), and creates it by
copying an empty store already migrated by this MLflow version (made once per user and MLflow
version, in `$XDG_CACHE_HOME/ppo-platform`, itself under a lock). The copy's default
experiment is pointed where MLflow would have put it (`./mlruns` of the working directory).
If the cache cannot be written, the store is created the ordinary way, still under the lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

SQLITE_PREFIX = "sqlite:///"


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock on `path` (created if missing) for the block."""
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ppo-platform"


def _migrate(database: Path) -> None:
    """Create an empty store at `database` the ordinary way (every migration)."""
    from mlflow.tracking import MlflowClient

    MlflowClient(f"{SQLITE_PREFIX}{database}").search_experiments(max_results=1)


def _template() -> Path:
    """The migrated empty store of this MLflow version (made now if missing)."""
    import mlflow

    folder = _cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    template = folder / f"mlflow-{mlflow.__version__}-empty.db"
    with file_lock(folder / f"{template.name}.lock"):
        if not template.exists():
            partial = template.with_name(f"{template.name}.{os.getpid()}.partial")
            partial.unlink(missing_ok=True)
            _migrate(partial)
            os.replace(partial, template)
    return template


def _copy(template: Path, database: Path) -> None:
    """`template` to `database` (a consistent copy, renamed into place), its default
    experiment's artifact location set as MLflow would have set it here."""
    from mlflow.utils.uri import resolve_uri_if_local

    partial = database.with_name(f"{database.name}.{os.getpid()}.partial")
    partial.unlink(missing_ok=True)
    source = contextlib.closing(sqlite3.connect(template))
    with source as copy_from, contextlib.closing(sqlite3.connect(partial)) as target:
        copy_from.backup(target)
        with target:
            target.execute(
                "UPDATE experiments SET artifact_location = ? WHERE experiment_id = 0",
                (resolve_uri_if_local("./mlruns"),),
            )
    os.replace(partial, database)


def create_sqlite_store(tracking_uri: str) -> None:
    """Make sure the SQLite store at `tracking_uri` exists, creating it at most once."""
    database = Path(tracking_uri.removeprefix(SQLITE_PREFIX))
    database.parent.mkdir(parents=True, exist_ok=True)  # SQLite creates no folder
    if database.exists() and database.stat().st_size > 0:
        return
    with file_lock(database.with_name(f"{database.name}.init.lock")):
        if database.exists() and database.stat().st_size > 0:
            return  # another process created it while this one waited
        try:
            template = _template()
        except OSError:  # no cache to write: every migration here, still under the lock
            _migrate(database)
            return
        _copy(template, database)
