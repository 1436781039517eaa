"""Engines for the job store and its migrations (Alembic, applied on start).

SQLite is shared by the API process and every job process: WAL journal (readers never wait
for the writer), a busy timeout, and `BEGIN IMMEDIATE` on write sessions, so a transaction
that reads and then writes waits for the lock instead of failing with "database is locked".
`synchronous=NORMAL` by default: a commit is in the WAL file before the 202 is sent, so a
crashed or killed process loses nothing; only a power loss or OS crash can take back the last
commits (before a checkpoint). `PPO_PLATFORM_JOBS_SQLITE_SYNCHRONOUS=full` fsyncs every commit.

WAL checkpoints: SQLite copies the WAL back into the database file in the commit that takes it
past 1,000 pages, about one submission in 90, which then took 6 ms instead of 0.5 and held up
every submission queued behind it. The intake workers' engines (`deferred_checkpoints`) leave
that to `checkpoint()`, which a worker runs when it has no call waiting, every 100 submissions
(about the same 1,000 pages); past 10,000 pages (40 MB, a worker that is never idle) their own
commits checkpoint again.
"""

from __future__ import annotations

import fcntl
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from ppo_platform.errors import BadInputError, SpecIssue, UnavailableError
from ppo_platform.jobs.config import get_service_settings
from ppo_platform.spec.names import refuse_unknown_host

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
BUSY_TIMEOUT_SECONDS = 30
START_ATTEMPTS = 4  # a store that does not answer at start: retried with backoff (~3.5 s)
START_BACKOFF_SECONDS = 0.5


DEFERRED_CHECKPOINT_PAGES = 10_000  # an intake worker's WAL, at most, before it checkpoints


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.isolation_level = None  # SQLAlchemy's "begin" event issues BEGIN
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA synchronous={get_service_settings().jobs_sqlite_synchronous.upper()}")
    cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_SECONDS * 1000}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _sqlite_begin(connection: Any) -> None:
    mode = connection.get_execution_options().get("sqlite_begin", "DEFERRED")
    connection.exec_driver_sql(f"BEGIN {mode}")


def _deferred_checkpoints(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.execute(f"PRAGMA wal_autocheckpoint={DEFERRED_CHECKPOINT_PAGES}")


def checkpoint(engine: Engine) -> None:
    """Copy the WAL back into an SQLite database (PASSIVE: it waits for no reader or writer)."""
    if engine.dialect.name == "sqlite":
        with engine.connect() as connection:
            connection.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)")


def make_engine(url: str, deferred_checkpoints: bool = False) -> Engine:
    """An engine for `url`; SQLite files get their folder, WAL and a busy timeout (and, with
    `deferred_checkpoints`, WAL checkpoints left to `checkpoint()` up to 10,000 pages)."""
    try:
        parsed = make_url(url)
    except ArgumentError as error:
        issue = SpecIssue(
            "PPO_PLATFORM_JOBS_DATABASE_URL",
            f"is not a SQLAlchemy URL ({error}).",
            url,
            fix="use sqlite:///PATH or postgresql+psycopg://user:password@host/db.",
        )
        raise BadInputError([issue]) from None
    if parsed.get_backend_name() != "sqlite":
        refuse_unknown_host(
            url, "PPO_PLATFORM_JOBS_DATABASE_URL", "check the host name in the URL."
        )
        return create_engine(url, pool_pre_ping=True)
    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_SECONDS})
    event.listen(engine, "connect", _sqlite_pragmas)
    if deferred_checkpoints:
        event.listen(engine, "connect", _deferred_checkpoints)
    event.listen(engine, "begin", _sqlite_begin)
    return engine


def writer(engine: Engine) -> Engine:
    """`engine` for write transactions: on SQLite they take the write lock up front."""
    return engine.execution_options(sqlite_begin="IMMEDIATE")


def sessions(engine: Engine) -> tuple[sessionmaker[Session], sessionmaker[Session]]:
    """(read sessions, write sessions); on SQLite a write session takes the lock up front."""
    return (
        sessionmaker(engine, expire_on_commit=False),
        sessionmaker(writer(engine), expire_on_commit=False),
    )


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """One migrating process at a time on this machine (uvicorn --workers start together)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def migrate(engine: Engine, lock_path: Path) -> None:
    """Bring the store's schema to the newest migration (a no-op when it is there already)."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with _file_lock(lock_path):
        for attempt in range(START_ATTEMPTS):
            try:
                with engine.begin() as connection:
                    config.attributes["connection"] = connection
                    command.upgrade(config, "heads")  # two branches may both revise 0002
                return
            except OperationalError as error:  # the server may still be starting: back off
                if attempt == START_ATTEMPTS - 1:
                    raise UnavailableError(
                        "the job store at PPO_PLATFORM_JOBS_DATABASE_URL="
                        f"{engine.url.render_as_string(hide_password=True)} does not answer "
                        f"after {START_ATTEMPTS} attempts: {error.orig}. Fix: start the "
                        "database or correct the URL."
                    ) from error
                time.sleep(min(START_BACKOFF_SECONDS * 2**attempt, 5.0))
