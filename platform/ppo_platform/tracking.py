"""MLflow tracking: one run per training run, metrics buffered and written in batches.

A synchronous MLflow write costs 10-15 ms on SQLite, so metrics are buffered and flushed with
`log_batch` every few seconds. Several processes writing one SQLite store can hit "database is
locked": every write goes through `_retry`.
"""

from __future__ import annotations

import json
import random
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from mlflow.entities import Param, RunTag
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from .metrics_writer import MetricRow, shared_writer, write_rows
from .spec import ExperimentSpec, flatten

T = TypeVar("T")
MAX_BATCH_PARAMS = 100
TAG_PREFIX = "ppo_platform."


def _retry(call: Callable[[], T], attempts: int = 8) -> T:
    """Retry an MLflow write on SQLite lock contention, with jittered backoff."""
    for attempt in range(attempts):
        try:
            return call()
        except MlflowException as error:
            if "locked" not in str(error).lower() or attempt == attempts - 1:
                raise
            time.sleep(0.05 * 2**attempt * (1 + random.random()))
    raise AssertionError("unreachable")


def _param_value(value: Any) -> str:
    text = json.dumps(value) if isinstance(value, (list, dict)) else str(value)
    return text[:6000]  # MLflow's limit on a param value


def ensure_experiment(client: MlflowClient, name: str, artifact_root: Path | None = None) -> str:
    """The id of experiment `name`, created (artifacts under `artifact_root`) if missing."""
    found = _retry(lambda: client.get_experiment_by_name(name))
    if found is not None:
        return str(found.experiment_id)
    location = (artifact_root / name).resolve().as_uri() if artifact_root else None
    try:
        return str(_retry(lambda: client.create_experiment(name, artifact_location=location)))
    except MlflowException:
        found = _retry(lambda: client.get_experiment_by_name(name))  # another process won
        if found is None:
            raise
        return str(found.experiment_id)


class RunTracker:
    """Writes one training run to MLflow. Metrics are kept in memory too (for plots)."""

    def __init__(
        self, tracking_uri: str, run_id: str, flush_seconds: float = 10.0, background: bool = True
    ) -> None:
        self.client = MlflowClient(tracking_uri)
        self.tracking_uri = tracking_uri
        self.run_id = run_id
        self.flush_seconds = flush_seconds
        self.history: dict[str, list[tuple[int, float]]] = defaultdict(list)
        self.writer = shared_writer() if background else None
        self._pending: list[MetricRow] = []
        self._last_flush = time.monotonic()
        self.write_seconds = 0.0  # time spent in MLflow calls, to keep logging overhead honest

    @classmethod
    def start(
        cls,
        tracking_uri: str,
        spec: ExperimentSpec,
        *,
        parent_run_id: str | None = None,
        tags: dict[str, str] | None = None,
        flush_seconds: float = 10.0,
        artifact_root: Path | None = None,
    ) -> RunTracker:
        """Create the MLflow run for `spec` in its experiment, with params and identifying tags."""
        client = MlflowClient(tracking_uri)
        experiment_id = ensure_experiment(client, spec.experiment_name, artifact_root)
        run_tags = {
            "mlflow.runName": spec.name,
            f"{TAG_PREFIX}spec_hash": spec.spec_hash(),
            f"{TAG_PREFIX}algorithm": spec.algorithm,
            f"{TAG_PREFIX}env_id": spec.env.id,
            **spec.tracking.tags,
            **(tags or {}),
        }
        if parent_run_id:
            run_tags["mlflow.parentRunId"] = parent_run_id
        run = _retry(lambda: client.create_run(experiment_id, tags=run_tags))
        tracker = cls(tracking_uri, run.info.run_id, flush_seconds)
        tracker.log_params(flatten(spec.resolved()))
        return tracker

    def log_params(self, params: dict[str, Any]) -> None:
        items = [Param(key, _param_value(value)) for key, value in params.items()]
        for start in range(0, len(items), MAX_BATCH_PARAMS):
            chunk = items[start : start + MAX_BATCH_PARAMS]
            self._timed(partial(self.client.log_batch, self.run_id, params=chunk))

    def set_tags(self, tags: dict[str, str]) -> None:
        run_tags = [RunTag(key, str(value)[:5000]) for key, value in tags.items()]
        self._timed(lambda: self.client.log_batch(self.run_id, tags=run_tags))

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        """Buffer metrics at `step`; written with the next flush."""
        now_ms = int(time.time() * 1000)
        for key, value in metrics.items():
            self.history[key].append((step, float(value)))
            self._pending.append((key, float(value), now_ms, step))
        if time.monotonic() - self._last_flush >= self.flush_seconds:
            self.flush()

    def flush(self) -> None:
        """Hand buffered metrics to the writer process (or write them here if there is none)."""
        pending, self._pending = self._pending, []
        self._last_flush = time.monotonic()
        if not pending:
            return
        if self.writer is not None:
            self._timed(partial(self.writer.submit, self.tracking_uri, self.run_id, pending))
        else:
            self._timed(partial(write_rows, self.client, self.run_id, pending))

    def log_artifact(self, path: Path, artifact_path: str | None = None) -> None:
        self._timed(lambda: self.client.log_artifact(self.run_id, str(path), artifact_path))

    def log_text(self, text: str, artifact_file: str) -> None:
        self._timed(lambda: self.client.log_text(self.run_id, text, artifact_file))

    def log_dict(self, data: Any, artifact_file: str) -> None:
        self._timed(lambda: self.client.log_dict(self.run_id, data, artifact_file))

    def reopen(self) -> None:
        """Mark a resumed run as running again."""
        self._timed(lambda: self.client.update_run(self.run_id, status="RUNNING"))

    def finish(self, status: str) -> None:
        """Write every metric, then set the run's final status (FINISHED, FAILED or KILLED)."""
        self.flush()
        try:
            if self.writer is not None:
                self._timed(self.writer.drain)
        finally:
            self._timed(lambda: self.client.set_terminated(self.run_id, status=status))

    def _timed(self, call: Callable[[], T]) -> T:
        started = time.perf_counter()
        try:
            return _retry(call)
        finally:
            self.write_seconds += time.perf_counter() - started


def metric_history(
    client: MlflowClient, run_id: str, keys: Iterable[str]
) -> dict[str, list[tuple[int, float]]]:
    """Read back metric histories as (step, value) lists sorted by step."""
    return {
        key: sorted(
            (m.step, m.value) for m in _retry(partial(client.get_metric_history, run_id, key))
        )
        for key in keys
    }
