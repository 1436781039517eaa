"""MLflow tracking: one run per training run, metrics buffered and written in batches.

A synchronous MLflow write costs 10-15 ms on SQLite, so metrics are buffered and handed to the
writer process in batches. Every call goes through the gateway's `retry`. MLflow is imported
on first use, as in the rest of this package: the sweep and tuning packages import this module,
and validating their specs must not load MLflow.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ppo_platform.spec.experiment import ExperimentSpec, flatten
from ppo_platform.spec.lm import LMExperimentSpec
from ppo_platform.spec.names import path_inside
from ppo_platform.tracking import tags as tag
from ppo_platform.tracking.gateway import retry, tracking_client
from ppo_platform.tracking.liveness import claim_run, owner_tags
from ppo_platform.tracking.queries import metric_history
from ppo_platform.tracking.writer import MetricRow, shared_writer, write_rows

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

T = TypeVar("T")
MAX_BATCH_PARAMS = 100


def param_value(value: Any) -> str:
    """A spec value as an MLflow param (JSON for lists and dicts, cut to MLflow's limit)."""
    text = json.dumps(value) if isinstance(value, (list, dict)) else str(value)
    return text[:6000]  # MLflow's limit on a param value


def ensure_experiment(client: MlflowClient, name: str, artifact_root: Path | None = None) -> str:
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


def run_tags(
    spec: ExperimentSpec | LMExperimentSpec,
    parent_run_id: str | None = None,
    tags: dict[str, str] | None = None,
) -> dict[str, str]:
    """The tags a new run of `spec` starts with; this process is recorded as its owner."""
    run_tags = {
        tag.RUN_NAME: spec.name,
        tag.SPEC_HASH: spec.spec_hash(),
        tag.ALGORITHM: spec.algorithm,
        # An LM run has no env: its policy folder says what it trains.
        tag.ENV_ID: spec.env.id
        if isinstance(spec, ExperimentSpec)
        else f"lm:{spec.lm.model.policy}",
        **spec.tracking.tags,
        **(tags or {}),
        **owner_tags(),
    }
    if parent_run_id:
        run_tags[tag.PARENT_RUN_ID] = parent_run_id
    return run_tags


class RunTracker:
    """Writes one training run to MLflow. Metrics are kept in memory too (for plots)."""

    def __init__(
        self, tracking_uri: str, run_id: str, flush_seconds: float = 10.0, background: bool = True
    ) -> None:
        self._client = tracking_client(tracking_uri)
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
        client = tracking_client(tracking_uri)
        experiment_id = ensure_experiment(client, spec.experiment_name, artifact_root)
        new_tags = run_tags(spec, parent_run_id, tags)
        run = retry(lambda: client.create_run(experiment_id, tags=new_tags))
        tracker = cls(tracking_uri, run.info.run_id, flush_seconds)
        tracker.log_params(flatten(spec.resolved()))
        return tracker

    def log_params(self, params: dict[str, Any]) -> None:
        from mlflow.entities import Param

        items = [Param(key, param_value(value)) for key, value in params.items()]
        for start in range(0, len(items), MAX_BATCH_PARAMS):
            chunk = items[start : start + MAX_BATCH_PARAMS]
            self._timed(partial(self._client.log_batch, self.run_id, params=chunk))

    def set_tags(self, tags: dict[str, str]) -> None:
        from mlflow.entities import RunTag

        run_tags = [RunTag(key, str(value)[:5000]) for key, value in tags.items()]
        self._timed(lambda: self._client.log_batch(self.run_id, tags=run_tags))

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
            self._timed(partial(write_rows, self._client, self.run_id, pending))

    def log_artifact(self, path: Path, artifact_path: str | None = None) -> None:
        self._timed(lambda: self._client.log_artifact(self.run_id, str(path), artifact_path))

    def log_text(self, text: str, artifact_file: str) -> None:
        self._timed(lambda: self._client.log_text(self.run_id, text, artifact_file))

    def log_dict(self, data: Any, artifact_file: str) -> None:
        self._timed(lambda: self._client.log_dict(self.run_id, data, artifact_file))

    def reopen(self) -> None:
        """Mark a resumed run as running again."""
        self._timed(lambda: self._client.update_run(self.run_id, status="RUNNING"))
        self._timed(partial(claim_run, self._client, self.run_id))

    def finish(self, status: str) -> None:
        """Write every metric, then set the run's final status (FINISHED, FAILED or KILLED)."""
        self.flush()
        try:
            if self.writer is not None:
                self._timed(self.writer.drain)
        finally:
            self._timed(lambda: self._client.set_terminated(self.run_id, status=status))

    def _timed(self, call: Callable[[], T]) -> T:
        started = time.perf_counter()
        try:
            return retry(call)
        finally:
            self.write_seconds += time.perf_counter() - started

    def stored_history(self, keys: Iterable[str]) -> dict[str, list[tuple[int, float]]]:
        """This run's stored metric histories, as (step, value) lists sorted by step."""
        return metric_history(self._client, self.run_id, keys)
