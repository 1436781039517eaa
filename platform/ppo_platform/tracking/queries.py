"""Read-side queries over the tracking store: run searches, child runs, metric histories."""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from typing import TYPE_CHECKING, Any

from ppo_platform.tracking import tags
from ppo_platform.tracking.gateway import retry

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

MAX_RESULTS_PER_PAGE = 1000


def search_all(client: MlflowClient, experiment_id: str, filter_string: str) -> list[Any]:
    """Every active run matching `filter_string` (all result pages)."""
    runs: list[Any] = []
    token = None
    while True:
        page = retry(
            partial(
                client.search_runs,
                [experiment_id],
                filter_string,
                max_results=MAX_RESULTS_PER_PAGE,
                page_token=token,
            )
        )
        runs.extend(page)
        token = page.token
        if not token:
            return runs


def child_runs(client: MlflowClient, experiment_id: str, parent_run_id: str) -> list[Any]:
    """The runs whose parent is `parent_run_id`."""
    return search_all(client, experiment_id, f"tags.`{tags.PARENT_RUN_ID}` = '{parent_run_id}'")


def metric_history(
    client: MlflowClient, run_id: str, keys: Iterable[str]
) -> dict[str, list[tuple[int, float]]]:
    """Read back metric histories as (step, value) lists sorted by step."""
    return {
        key: sorted(
            (m.step, m.value) for m in retry(partial(client.get_metric_history, run_id, key))
        )
        for key in keys
    }


def metric_keys(client: MlflowClient, run_id: str) -> list[str]:
    """The keys of every metric the run has logged, sorted."""
    return sorted(retry(partial(client.get_run, run_id)).data.metrics)
