"""The read side of the tracking store, as plain data: what reports and the API read back.

Every function takes a client and returns JSON-able values (dicts, lists, numbers), so the same
read can run in the tracking process (for a process that must not import MLflow: a sweep's
job) or in the caller (the CLI's `report`, the API's metrics).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from typing import TYPE_CHECKING, Any

from ppo_platform.errors import RunNotFoundError
from ppo_platform.tracking import tags as tag
from ppo_platform.tracking.gateway import retry, tracking_client
from ppo_platform.tracking.queries import child_runs, metric_history, metric_keys

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

Points = list[tuple[int, float]]


def last_per_step(client: MlflowClient, run_id: str, key: str) -> Points:
    """(step, value) sorted by step, one value per step (the last one logged)."""
    metrics = sorted(
        retry(partial(client.get_metric_history, run_id, key)), key=lambda m: (m.step, m.timestamp)
    )
    last: dict[int, float] = {m.step: m.value for m in metrics}
    return sorted(last.items())


def histories(client: MlflowClient, run_id: str, keys: Iterable[str]) -> dict[str, Points]:
    """Stored metric histories of a run, as (step, value) lists sorted by step."""
    return metric_history(client, run_id, keys)


def stored_history(tracking_uri: str, run_id: str, key: str) -> Points:
    """One metric's stored history of a run (the API's metrics route)."""
    return histories(tracking_client(tracking_uri), run_id, [key])[key]


def stored_metric_keys(tracking_uri: str, run_id: str) -> list[str]:
    """The keys of every metric a run has logged, sorted (the API's metrics list)."""
    return metric_keys(tracking_client(tracking_uri), run_id)


def sweep_runs(client: MlflowClient, parent_run_id: str, keys: Iterable[str]) -> dict[str, Any]:
    """A sweep's (or a batch of seeds') parent (tags) and its child runs: id, status, start
    time, tags, params, latest metrics and the histories of `keys` (last value per step).
    RunNotFoundError if the id is no such parent run."""
    from mlflow.exceptions import MlflowException

    try:
        parent = retry(partial(client.get_run, parent_run_id))
    except MlflowException as error:
        raise RunNotFoundError(
            f"no MLflow run {parent_run_id!r}: give the parent run id that "
            "`ppo-platform sweep` printed."
        ) from error
    if parent.data.tags.get(tag.KIND) not in ("sweep", "seeds"):
        raise RunNotFoundError(
            f"run {parent_run_id} is not the parent run of a sweep or of a batch of seeds "
            f"(tag {tag.KIND} is neither 'sweep' nor 'seeds')."
        )
    keys = list(keys)
    children = [
        {
            "run_id": run.info.run_id,
            "status": run.info.status,
            "start_time": run.info.start_time,
            "tags": dict(run.data.tags),
            "params": dict(run.data.params),
            "metrics": dict(run.data.metrics),
            "histories": {key: last_per_step(client, run.info.run_id, key) for key in keys},
        }
        for run in child_runs(client, parent.info.experiment_id, parent_run_id)
    ]
    return {
        "parent": {"run_id": parent_run_id, "tags": dict(parent.data.tags)},
        "children": children,
    }


def stored_run(tracking_uri: str, run_id: str) -> dict[str, Any]:
    """A run's status, tags and every metric's history (last value per step), as plain data:
    what the doctor reads. RunNotFoundError if the store does not know the id."""
    from mlflow.exceptions import MlflowException

    client = tracking_client(tracking_uri)
    try:
        run = retry(partial(client.get_run, run_id))
    except MlflowException as error:
        raise RunNotFoundError(
            f"no MLflow run {run_id!r} in {tracking_uri}: give a run id that `ppo-platform "
            "run` printed (the same PPO_PLATFORM_HOME or MLFLOW_TRACKING_URI)."
        ) from error
    return {
        "run_id": run_id,
        "status": run.info.status,
        "tags": dict(run.data.tags),
        "metrics": {key: last_per_step(client, run_id, key) for key in sorted(run.data.metrics)},
    }
