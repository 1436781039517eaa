"""Compare your experiments' runs: IQM with bootstrap intervals and a verdict per pair
(the same numbers as `ppo-platform compare`; docs/guides/comparing-runs.md)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from ppo_platform.api.deps import OwnerDep, SettingsDep, StoreDep
from ppo_platform.api.errors import ERROR_RESPONSES, error_responses
from ppo_platform.api.schemas import ComparisonPublic
from ppo_platform.errors import NotFoundError

router = APIRouter(prefix="/v1/comparisons", tags=["comparisons"], responses=ERROR_RESPONSES)
ExperimentIds = Annotated[
    list[Annotated[str, Query(pattern=r"^[0-9a-f]{32}$")]],
    Query(
        min_length=1,
        max_length=20,
        description="Experiment ids (runs, sweeps, studies) whose runs are compared.",
    ),
]


@router.get("", response_model=ComparisonPublic, responses=error_responses(404, 422))
def compare_experiments(
    owner: OwnerDep,
    store: StoreDep,
    settings: SettingsDep,
    experiment: ExperimentIds,
    by: Annotated[
        str,
        Query(
            pattern=r"^(variant|spec|tag:[A-Za-z0-9_.\-/ ]{1,250})$",
            description="variant (grid point or trial), spec (spec hash) or tag:KEY.",
        ),
    ] = "variant",
    metric: Annotated[
        str, Query(pattern=r"^[A-Za-z0-9_.\-/ ]{1,250}$", description="The score's metric.")
    ] = "eval/mean_reward",
    baseline: Annotated[str | None, Query(max_length=500)] = None,
    threshold: Annotated[
        float | None, Query(allow_inf_nan=False, description="Score that counts as solved.")
    ] = None,
) -> Any:
    """Your experiments' runs grouped and compared: every pair, or each group with `baseline`."""
    from ppo_platform.reports.compare import compare_runs  # MLflow: on first use only

    run_ids = []
    for experiment_id in experiment:
        job = store.get(experiment_id, owner)  # another key's experiment: 404
        if not job.mlflow_run_id:
            raise NotFoundError(f"experiment {experiment_id} has no MLflow run yet to compare.")
        run_ids.append(job.mlflow_run_id)
    comparison = compare_runs(
        run_ids,
        settings.tracking_uri,
        metric=metric,
        by=by,
        baseline=baseline,
        threshold=threshold,
    )
    return comparison.to_json()
