"""The doctor's diagnosis of an experiment's run: its likely root causes, most likely first."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter

from ppo_platform.api.deps import OwnerDep, SettingsDep, StoreDep
from ppo_platform.api.errors import ERROR_RESPONSES, error_responses
from ppo_platform.api.routes.trained_model import RUN_ID
from ppo_platform.api.schemas import DiagnosisPublic, ExperimentId
from ppo_platform.errors import NotFoundError

router = APIRouter(prefix="/v1/experiments", tags=["experiments"], responses=ERROR_RESPONSES)
DIAGNOSIS_FILE = "diagnosis.json"  # what a run leaves in its folder (training/diagnosis.py)


@router.get(
    "/{experiment_id}/diagnosis",
    response_model=DiagnosisPublic,
    responses=error_responses(404, 422),
)
def get_diagnosis(
    experiment_id: ExperimentId, owner: OwnerDep, store: StoreDep, settings: SettingsDep
) -> Any:
    """Likely root causes of the run's trouble, with evidence and spec patches (empty: healthy)."""
    job = store.get(experiment_id, owner)
    run_id = job.mlflow_run_id or ""
    path = settings.runs_dir / run_id / DIAGNOSIS_FILE if RUN_ID.fullmatch(run_id) else None
    if path is None or not path.is_file():
        raise NotFoundError(
            f"experiment {experiment_id} has no diagnosis yet: a run has one once it has "
            "ended (a sweep's or study's report lists each member's top cause)."
        )
    return json.loads(path.read_text(encoding="utf-8"))
