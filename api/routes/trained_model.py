"""A run's trained agent: `model.zip` (loads in plain stable-baselines3) and `vecnormalize.pkl`
(the observation statistics it was trained with), to the experiment's owner only.

The files are the ones the run wrote to its `final/` folder; the request only picks one of the
two names, so nothing from it becomes a path. Files are streamed, and refused over the
`max_download_bytes` setting.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse

from ppo_platform.api.deps import OwnerDep, ServiceDep, SettingsDep, StoreDep
from ppo_platform.api.errors import ERROR_RESPONSES, error_responses
from ppo_platform.api.schemas import ErrorPublic, ExperimentId
from ppo_platform.errors import NotFoundError
from ppo_platform.jobs import Experiment
from ppo_platform.settings import Settings

router = APIRouter(prefix="/v1/experiments", tags=["artifacts"], responses=ERROR_RESPONSES)
RUN_ID = re.compile(r"^[0-9a-f]{32}$")
ModelFile = Literal["model.zip", "vecnormalize.pkl"]
MODEL_FILES: tuple[ModelFile, ...] = ("model.zip", "vecnormalize.pkl")
MEDIA_TYPES = {"model.zip": "application/zip", "vecnormalize.pkl": "application/octet-stream"}
BINARY = {"schema": {"type": "string", "format": "binary"}}


def model_files(job: Experiment, settings: Settings) -> dict[str, Path]:
    """The trained-agent files a run experiment has (none for sweeps and studies: their
    runs are many), by name; never a link out of the run's folder."""
    if job.kind != "run" or not job.mlflow_run_id or not RUN_ID.fullmatch(job.mlflow_run_id):
        return {}
    final = settings.runs_dir / job.mlflow_run_id / "final"
    found: dict[str, Path] = {}
    for name in MODEL_FILES:
        path = final / name
        if path.is_file() and not path.is_symlink() and path.resolve().parent == final.resolve():
            found[name] = path
    return found


@router.get(
    "/{experiment_id}/model/{file}",
    operation_id="downloadModel",
    response_class=FileResponse,
    responses={
        200: {
            "description": "The file, streamed.",
            "content": {"application/zip": BINARY, "application/octet-stream": BINARY},
        },
        **error_responses(404, 422),
        413: {"model": ErrorPublic, "description": "The file is over max_download_bytes."},
    },
)
def download_model(
    experiment_id: ExperimentId,
    file: ModelFile,
    owner: OwnerDep,
    store: StoreDep,
    settings: SettingsDep,
    service: ServiceDep,
) -> FileResponse:
    """The run's trained model (`model.zip`) or its normalization statistics."""
    job = store.get(experiment_id, owner)
    path = model_files(job, settings).get(file)
    if path is None:
        raise NotFoundError(
            f"experiment {experiment_id} has no {file} (a run writes it when it finishes; "
            "vecnormalize.pkl only when env.normalize is on; sweeps and studies have one per run)."
        )
    check_download_size(path, file, service.max_download_bytes)
    return FileResponse(path, filename=file, media_type=MEDIA_TYPES[file])


def check_download_size(path: Path, name: str, limit: int) -> None:
    """413 for a file over the server's download limit (before a byte is sent)."""
    size = path.stat().st_size
    if size > limit:
        raise HTTPException(
            413,
            f"{name} is {size} bytes, over this server's limit of {limit} "
            "(PPO_PLATFORM_MAX_DOWNLOAD_BYTES); ask its operator, or copy it from the run folder.",
        )
