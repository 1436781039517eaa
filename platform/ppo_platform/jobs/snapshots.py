"""Status reads from memory that are never staler than the store.

Clients poll `GET /v1/experiments/{id}`; most polls find the row as it was. `StatusSnapshots`
keeps the rendered body of each experiment read recently together with two versions: SQLite's
`PRAGMA data_version` (it moves whenever any other connection, of this process or a job
process, commits) and the row's own `row_version` (every UPDATE moves it on). A lookup answers
from memory when no commit happened since the body was rendered, or when the row's version is
unchanged (one primary-key read); otherwise it misses and the caller loads the row again. So a
status change is visible at once after its commit, whoever made it.

Only the SQLite job store has `data_version`; on other databases lookups always miss and every
read goes to the store as before.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from ppo_platform.jobs.models import Experiment
from ppo_platform.jobs.store import JobStore

Body = TypeVar("Body")
MAX_ENTRIES = 4096


@dataclass
class _Entry(Generic[Body]):
    owner: str
    body: Body
    row_version: int
    data_version: int


class StatusSnapshots(Generic[Body]):
    """Rendered experiments by id; `render` turns a row into the body the caller serves."""

    def __init__(self, store: JobStore, render: Callable[[Experiment], Body]) -> None:
        self.store, self.render = store, render
        self._entries: dict[str, _Entry[Body]] = {}
        self._lock = threading.Lock()
        self._monitor = _monitor_connection(store)

    @property
    def enabled(self) -> bool:
        return self._monitor is not None

    def close(self) -> None:
        if self._monitor is not None:
            self._monitor.close()
            self._monitor = None

    def lookup(self, experiment_id: str, owner: str) -> Body | None:
        """The current body from memory, or None (not held, another owner's, or changed).
        Cheap enough for the event loop: one pragma, at most one primary-key read."""
        entry = self._entries.get(experiment_id)
        if entry is None or entry.owner != owner or self._monitor is None:
            return None
        with self._lock:
            version = self._data_version()
            if version == entry.data_version:
                return entry.body
            found = self._monitor.execute(
                "SELECT row_version FROM experiments WHERE id = ?", (experiment_id,)
            ).fetchone()
        if found is None or found[0] != entry.row_version:
            return None
        entry.data_version = version  # unchanged through the commits up to `version`
        return entry.body

    def load(self, experiment_id: str, owner: str) -> Body:
        """Read the row (NotFoundError for another owner's), render and keep it; blocking."""
        version = self._current_version()  # before the read: a later commit makes it miss
        row = self.store.get(experiment_id, owner)
        body = self.render(row)
        if self._monitor is not None:
            with self._lock:
                if len(self._entries) >= MAX_ENTRIES:
                    self._entries.pop(next(iter(self._entries)))
                self._entries[experiment_id] = _Entry(owner, body, row.row_version, version)
        return body

    def _current_version(self) -> int:
        if self._monitor is None:
            return -1
        with self._lock:
            return self._data_version()

    def _data_version(self) -> int:
        assert self._monitor is not None
        return int(self._monitor.execute("PRAGMA data_version").fetchone()[0])


def _monitor_connection(store: JobStore) -> sqlite3.Connection | None:
    """A connection of its own that only reads (its data_version sees every other commit)."""
    url = store.engine.url
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return None
    connection = sqlite3.connect(url.database, check_same_thread=False, isolation_level=None)
    connection.execute("PRAGMA busy_timeout=30000")
    return connection
