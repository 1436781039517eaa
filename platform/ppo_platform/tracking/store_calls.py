"""The MLflow calls the tracking service makes to write a run: the experiment, params, tags and
metric rows, in MLflow-sized batches, each call through the gateway's `retry`."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from ppo_platform.spec.names import path_inside
from ppo_platform.tracking.gateway import retry
from ppo_platform.tracking.process import MetricRow
from ppo_platform.tracking.sqlite_metrics import write_metric_rows

MAX_BATCH_PARAMS = 100
MAX_BATCH_METRICS = 1000


def ensure_experiment(client: Any, name: str, artifact_root: Path | None = None) -> str:
    """The id of experiment `name`, created (artifacts under `artifact_root`) if missing."""
    from mlflow.exceptions import MlflowException

    found = retry(lambda: client.get_experiment_by_name(name))
    if found is not None:
        return str(found.experiment_id)
    folder = path_inside(artifact_root, [name], "tracking.experiment") if artifact_root else None
    location = folder.as_uri() if folder else None
    try:
        return str(retry(lambda: client.create_experiment(name, artifact_location=location)))
    except MlflowException:
        found = retry(lambda: client.get_experiment_by_name(name))  # another process won
        if found is None:
            raise
        return str(found.experiment_id)


def write_rows(client: Any, run_id: str, rows: list[MetricRow], uri: str = "") -> None:
    """Write rows: straight into a local SQLite store at `uri` (tracking/sqlite_metrics.py),
    else with `log_batch` in MLflow-sized chunks (retrying on SQLite locks)."""
    from mlflow.entities import Metric

    if write_metric_rows(uri, run_id, rows):
        return
    metrics = [Metric(key, value, timestamp, step) for key, value, timestamp, step in rows]
    for start in range(0, len(metrics), MAX_BATCH_METRICS):
        chunk = metrics[start : start + MAX_BATCH_METRICS]
        retry(partial(client.log_batch, run_id, metrics=chunk))


def set_tags(client: Any, run_id: str, tags: dict[str, str]) -> None:
    from mlflow.entities import RunTag

    run_tags = [RunTag(key, str(value)[:5000]) for key, value in tags.items()]
    retry(partial(client.log_batch, run_id, tags=run_tags))


def log_params(client: Any, run_id: str, params: dict[str, str]) -> None:
    from mlflow.entities import Param

    items = [Param(key, value) for key, value in params.items()]
    for start in range(0, len(items), MAX_BATCH_PARAMS):
        retry(partial(client.log_batch, run_id, params=items[start : start + MAX_BATCH_PARAMS]))
