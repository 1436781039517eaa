"""The runs `compare` scores, as plain data: each id given (a run, a sweep's parent, a study's
parent, a trial) resolved to the training runs under it, with their tags and latest metrics."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from ppo_platform.errors import RunNotFoundError
from ppo_platform.spec.names import check_run_id
from ppo_platform.tracking import tags as tag
from ppo_platform.tracking.gateway import retry
from ppo_platform.tracking.queries import child_runs

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

# Runs whose own children are the training runs to compare; a study's children are such runs.
PARENT_KINDS = ("sweep", "trial", "verify", "seeds")


def _plain(run: Any, source: dict[str, str], parent_name: str) -> dict[str, Any]:
    return {
        "run_id": run.info.run_id,
        "status": run.info.status,
        "start_time": run.info.start_time,
        "tags": dict(run.data.tags),
        "metrics": dict(run.data.metrics),
        "parent_name": parent_name,
        "source": source,
    }


def _get(client: MlflowClient, run_id: str) -> Any:
    from mlflow.exceptions import MlflowException

    try:
        return retry(partial(client.get_run, check_run_id(run_id, "ID")))
    except MlflowException as error:
        raise RunNotFoundError(
            f"no MLflow run {run_id!r}: give run ids, or the parent run ids that "
            "`ppo-platform sweep` and `ppo-platform tune` printed."
        ) from error


def _leaves(client: MlflowClient, run: Any, source: dict[str, str]) -> list[dict[str, Any]]:
    """The training runs under `run` (itself, if it is one)."""
    kind = run.data.tags.get(tag.KIND, "")
    name = run.data.tags.get(tag.RUN_NAME, run.info.run_id)
    if kind in PARENT_KINDS:
        children = child_runs(client, run.info.experiment_id, run.info.run_id)
        return [_plain(child, source, name) for child in children]
    if kind == "study":
        found: list[dict[str, Any]] = []
        for child in child_runs(client, run.info.experiment_id, run.info.run_id):
            found += _leaves(client, child, source)
        return found
    return [_plain(run, source, "")]


def compared_runs(client: MlflowClient, run_ids: list[str]) -> list[dict[str, Any]]:
    """Every training run under each id, in the order given; RunNotFoundError for an unknown
    id. Each run carries `source`: the id it was found under, with that run's name and kind."""
    found: list[dict[str, Any]] = []
    for run_id in run_ids:
        run = _get(client, run_id)
        source = {
            "run_id": run.info.run_id,
            "name": run.data.tags.get(tag.RUN_NAME, run.info.run_id),
            "kind": run.data.tags.get(tag.KIND, "run"),
        }
        found += _leaves(client, run, source)
    return found
