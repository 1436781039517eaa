"""A lock every worker of one study shares through the study's storage, wherever it runs.

Workers hold it from the budget check until their new trial exists in the storage, so a study
never starts more than n_trials trials, also when its workers are Ray tasks on several machines
(they share no process, only the storage):

- PostgreSQL: a session advisory lock keyed by the study name; the server drops it when the
  holder's connection ends, so a worker killed while holding it blocks nobody;
- a journal file or a SQLite database: an advisory file lock beside it (released by the kernel
  when the holder dies; every worker that can write the storage file can lock its neighbour).

Other databases get no cross-machine lock (`storage_lock` returns None).
"""

from __future__ import annotations

import fcntl
import hashlib
import time
from pathlib import Path
from typing import IO, Any

POLL_SECONDS = 0.05


def lock_key(study_name: str) -> int:
    """A stable signed 64-bit key for PostgreSQL's advisory locks."""
    digest = hashlib.sha256(f"ppo_platform study {study_name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class PostgresLock:
    """`pg_advisory_lock` on one held connection: acquire(timeout) -> bool, release()."""

    def __init__(self, url: str, study_name: str) -> None:
        from sqlalchemy import create_engine
        from sqlalchemy.pool import NullPool

        self.key = lock_key(study_name)
        self._engine = create_engine(url, poolclass=NullPool)
        self._connection: Any = None

    def acquire(self, timeout: float = -1) -> bool:
        from sqlalchemy import text

        if self._connection is None:
            self._connection = self._engine.connect().execution_options(
                isolation_level="AUTOCOMMIT"
            )
        query = text("SELECT pg_try_advisory_lock(:key)")
        deadline = None if timeout < 0 else time.monotonic() + timeout
        while not self._connection.execute(query, {"key": self.key}).scalar():
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(POLL_SECONDS)
        return True

    def release(self) -> None:
        from sqlalchemy import text

        self._connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": self.key})

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
        self._engine.dispose()


class FileLock:
    """`flock` on a file beside the storage file: acquire(timeout) -> bool, release()."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: IO[str] | None = None

    def acquire(self, timeout: float = -1) -> bool:
        handle = self.path.open("a")
        deadline = None if timeout < 0 else time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if deadline is not None and time.monotonic() >= deadline:
                    handle.close()
                    return False
                time.sleep(POLL_SECONDS)
                continue
            self._handle = handle
            return True

    def release(self) -> None:
        if self._handle is not None:
            self._handle.close()  # closing the file drops the lock
            self._handle = None

    def close(self) -> None:
        self.release()


def storage_lock(url: str, study_name: str) -> PostgresLock | FileLock | None:
    """The lock the workers of `study_name` on storage `url` share, or None (no such lock)."""
    if url.startswith("journal:"):
        journal = Path(url.removeprefix("journal:").removeprefix("//"))
        return FileLock(journal.with_name(f"{journal.name}.{lock_key(study_name)}.lock"))
    if url.startswith("sqlite:///"):
        database = Path(url.removeprefix("sqlite:///"))
        return FileLock(database.with_name(f"{database.name}.{lock_key(study_name)}.lock"))
    if url.startswith(("postgresql:", "postgresql+")):
        return PostgresLock(url, study_name)
    return None
