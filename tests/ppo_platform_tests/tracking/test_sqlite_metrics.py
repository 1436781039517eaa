"""Metric rows written straight into a SQLite MLflow store read back through MLflow exactly as
the same rows written with `log_batch`: histories, latest values, NaN and infinities, rows
repeated, steps out of order, batches split across calls; and where the path does not apply
(another store, a deleted run, another schema) nothing is written and `log_batch` takes over."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import pytest
from mlflow.entities import Metric
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from ppo_platform.tracking.gateway import tracking_client
from ppo_platform.tracking.sqlite_metrics import _connection, write_metric_rows
from ppo_platform.tracking.store_calls import write_rows

ROWS = [
    ("train/loss", 0.5, 1000, 1),
    ("train/loss", 0.25, 1001, 2),
    ("train/loss", 0.25, 1001, 2),  # the same row again: stored once
    ("train/approx_kl", float("nan"), 1002, 2),
    ("train/ratio_max", float("inf"), 1003, 3),
    ("train/ratio_min", float("-inf"), 1003, 3),
    ("train/loss", 9.0, 999, 0),  # an older step, logged later: history only, not latest
]
LATER = [("train/loss", 0.125, 1004, 3), ("train/approx_kl", 0.01, 1005, 1)]


@pytest.fixture
def store(tmp_path: Path) -> tuple[str, MlflowClient, str]:
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    client = tracking_client(uri)
    return uri, client, client.create_experiment("rows")


def _read(client: MlflowClient, run_id: str) -> tuple[dict, dict]:
    run = client.get_run(run_id)
    histories = {
        key: sorted(
            (m.step, m.timestamp, "nan" if math.isnan(m.value) else m.value)
            for m in client.get_metric_history(run_id, key)
        )
        for key in run.data.metrics
    }
    latest = {k: "nan" if math.isnan(v) else v for k, v in run.data.metrics.items()}
    return histories, latest


def test_rows_written_directly_read_back_as_log_batchs(store):
    uri, client, experiment = store
    direct = client.create_run(experiment).info.run_id
    batched = client.create_run(experiment).info.run_id
    for rows in (ROWS, LATER):
        assert write_metric_rows(uri, direct, rows)
        client.log_batch(batched, metrics=[Metric(*row) for row in rows])
    assert _read(client, direct) == _read(client, batched)
    histories, latest = _read(client, direct)
    assert latest["train/loss"] == 0.125 and latest["train/approx_kl"] == "nan"
    assert histories["train/loss"] == [
        (0, 999, 9.0),
        (1, 1000, 0.5),
        (2, 1001, 0.25),
        (3, 1004, 0.125),
    ]
    assert latest["train/ratio_max"] == 1.7976931348623157e308
    assert latest["train/ratio_min"] == -1.7976931348623157e308


def test_write_rows_takes_the_direct_path_on_sqlite_and_log_batch_elsewhere(store, tmp_path):
    uri, client, experiment = store
    run_id = client.create_run(experiment).info.run_id
    write_rows(client, run_id, ROWS, uri)
    assert _read(client, run_id)[1]["train/loss"] == 0.25
    assert not write_metric_rows("http://127.0.0.1:5000", run_id, ROWS)
    assert not write_metric_rows(f"file://{tmp_path}/mlruns", run_id, ROWS)


def test_a_deleted_run_gets_nothing_and_log_batch_says_why(store):
    uri, client, experiment = store
    run_id = client.create_run(experiment).info.run_id
    client.delete_run(run_id)
    assert not write_metric_rows(uri, run_id, ROWS)
    with pytest.raises(MlflowException, match="must be in the 'active' state"):
        write_rows(client, run_id, ROWS, uri)


def test_a_bad_metric_name_is_refused_in_mlflows_words(store):
    uri, client, experiment = store
    run_id = client.create_run(experiment).info.run_id
    bad = ("../up", 1.0, 1, 1)
    with pytest.raises(MlflowException, match="must not resolve to other names") as direct:
        write_metric_rows(uri, run_id, [bad])
    with pytest.raises(MlflowException) as batched:
        client.log_batch(run_id, metrics=[Metric(*bad)])
    assert "'../up'" in str(direct.value) and "'../up'" in str(batched.value)
    assert client.get_run(run_id).data.metrics == {}


def test_a_store_with_other_columns_is_left_to_log_batch(tmp_path):
    database = tmp_path / "other.db"
    with sqlite3.connect(database) as connection:
        connection.execute("CREATE TABLE metrics (key TEXT, value REAL)")
        connection.execute("CREATE TABLE latest_metrics (key TEXT, value REAL)")
    assert _connection(str(database)) is None
    assert not write_metric_rows(f"sqlite:///{database}", "run", ROWS)
