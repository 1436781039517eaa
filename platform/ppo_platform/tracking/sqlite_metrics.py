"""Metric rows straight into a SQLite MLflow store: the rows MLflow's `log_batch` writes, for a
small part of its CPU.

MLflow's SQLAlchemy store builds an ORM object per metric row and re-reads the run's latest
values per batch: about 0.2 ms of CPU per row on this project's 2-core machine, so a batch of
16 CartPole seeds (270k rows: 43 metrics x 391 updates each) kept the tracking process busy
for longer than the training took. Into a local SQLite store the tracking service writes the
rows itself, one transaction per request, as `log_batch` would: each row into `metrics` (a row
the store already has is skipped, as `log_batch` skips it), each key's newest (step, timestamp,
value) into `latest_metrics`, NaN stored as 0 with `is_nan` and infinities as the largest
floats, metric names checked by MLflow's own rule, and only into a run that is active. It does
so only where the two tables have exactly the columns this MLflow version creates (checked
once per store); for any other store, a schema that differs, or a database locked past its
busy timeout, the rows go through `log_batch` as before. A test writes the same rows both ways
and reads them back through MLflow (tests/ppo_platform_tests/tracking/test_sqlite_metrics.py).
"""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Sequence
from functools import lru_cache

from ppo_platform.tracking.process import MetricRow
from ppo_platform.tracking.sqlite_store import SQLITE_PREFIX

# What MLflow 3's schema gives each table: (column, its place in the primary key).
SCHEMA = {
    "metrics": {
        ("key", 1),
        ("value", 5),
        ("timestamp", 2),
        ("run_uuid", 4),
        ("step", 3),
        ("is_nan", 6),
    },
    "latest_metrics": {
        ("key", 1),
        ("value", 0),
        ("timestamp", 0),
        ("step", 0),
        ("is_nan", 0),
        ("run_uuid", 2),
    },
}
LARGEST = 1.7976931348623157e308  # MLflow's stand-in for an infinity (SQL has none)
BUSY_TIMEOUT = 30.0
INSERT = (
    "INSERT OR IGNORE INTO metrics (key, value, timestamp, run_uuid, step, is_nan) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)
NEWEST = (
    "INSERT INTO latest_metrics (key, value, timestamp, step, is_nan, run_uuid) "
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (key, run_uuid) DO UPDATE SET "
    "value = excluded.value, timestamp = excluded.timestamp, step = excluded.step, "
    "is_nan = excluded.is_nan WHERE (excluded.step, excluded.timestamp, excluded.value) > "
    "(latest_metrics.step, latest_metrics.timestamp, latest_metrics.value)"
)
_lock = threading.Lock()


@lru_cache(maxsize=8)
def _connection(database: str) -> sqlite3.Connection | None:
    """A connection to `database` whose metric tables have MLflow 3's columns, else None."""
    try:
        connection = sqlite3.connect(
            database, timeout=BUSY_TIMEOUT, isolation_level=None, check_same_thread=False
        )
        for table, expected in SCHEMA.items():
            found = {(row[1], row[5]) for row in connection.execute(f"PRAGMA table_info({table})")}
            if found != expected:
                connection.close()
                return None
    except sqlite3.Error:
        return None
    return connection


@lru_cache(maxsize=4096)
def _checked_name(key: str) -> str:
    from mlflow.utils.validation import _validate_metric_name

    _validate_metric_name(key)  # raises MlflowException naming the key, as log_batch does
    return key


def _stored(value: float) -> tuple[float, int]:
    """MLflow's encoding: (value, is_nan)."""
    value = float(value)
    if math.isnan(value):
        return 0.0, 1
    if math.isinf(value):
        return (LARGEST if value > 0 else -LARGEST), 0
    return value, 0


def write_metric_rows(uri: str, run_id: str, rows: Sequence[MetricRow]) -> bool:
    """Write `rows` of run `run_id` into the SQLite store at `uri` as `log_batch` would; False
    (nothing written) where this path does not apply and `log_batch` must write them."""
    if not uri.startswith(SQLITE_PREFIX) or not rows:
        return False
    connection = _connection(uri[len(SQLITE_PREFIX) :])
    if connection is None:
        return False
    stored = [
        (_checked_name(key), *_stored(value), int(timestamp), int(step))
        for key, value, timestamp, step in rows
    ]
    newest: dict[str, tuple[int, int, float, int]] = {}
    for key, value, is_nan, timestamp, step in stored:
        order = (step, timestamp, value, is_nan)
        if key not in newest or order[:3] > newest[key][:3]:
            newest[key] = order
    with _lock:
        try:
            connection.execute("BEGIN IMMEDIATE")
            stage = connection.execute(
                "SELECT lifecycle_stage FROM runs WHERE run_uuid = ?", (run_id,)
            ).fetchone()
            if stage is None or stage[0] != "active":  # log_batch says why, in MLflow's words
                connection.execute("ROLLBACK")
                return False
            connection.executemany(INSERT, [(k, v, t, run_id, s, n) for k, v, n, t, s in stored])
            connection.executemany(
                NEWEST, [(k, v, t, s, n, run_id) for k, (s, t, v, n) in newest.items()]
            )
            connection.execute("COMMIT")
        except sqlite3.OperationalError:  # locked past the busy timeout: log_batch retries
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            return False
    return True
