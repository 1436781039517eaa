"""An experiment's files: the resolved spec, plots, reports, best_spec.yaml, evaluation videos;
the listing also names the trained model's files (served by `trained_model.py`).

Files are found by listing folders the platform made for the experiment; a download names one
of the listed files, so nothing from the request becomes a path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter
from fastapi.responses import FileResponse, PlainTextResponse, Response

from ppo_platform.api.deps import OwnerDep, ServiceDep, SettingsDep, StoreDep
from ppo_platform.api.errors import ERROR_RESPONSES, error_responses
from ppo_platform.api.routes.trained_model import RUN_ID, check_download_size, model_files
from ppo_platform.api.schemas import ArtifactList, ArtifactPublic, ErrorPublic, ExperimentId
from ppo_platform.errors import NotFoundError
from ppo_platform.jobs import Experiment
from ppo_platform.jobs.worker import job_folder
from ppo_platform.settings import Settings
from ppo_platform.spec.loader import dump_spec
from ppo_platform.spec.workloads import stored_spec

router = APIRouter(prefix="/v1/experiments", tags=["artifacts"], responses=ERROR_RESPONSES)
RESOLVED_SPEC = "resolved_spec.yaml"
VIDEOS = "videos"  # a run's evaluation videos (`evaluation.video`)
# What each listed file goes out as (the resolved spec is YAML too).
MEDIA_TYPES = {
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".json": "application/json",
    ".md": "text/markdown",
    ".png": "image/png",
    ".csv": "text/csv",
    ".txt": "text/plain",
    ".mp4": "video/mp4",
}
SUFFIXES = set(MEDIA_TYPES)
# Structured files are any value once parsed; the others are text or bytes.
FILE_CONTENT = {
    media: {"schema": {} if media.startswith("application/") else {"type": "string"}}
    for media in sorted(set(MEDIA_TYPES.values()))
}


def _folders(job: Experiment, settings: Settings) -> list[Path]:
    folders = [job_folder(settings, job.id)]
    if job.mlflow_run_id and RUN_ID.fullmatch(job.mlflow_run_id):
        run_dir = settings.runs_dir / job.mlflow_run_id
        folders += [run_dir, run_dir / "report", run_dir / VIDEOS]
    return folders


def _files(job: Experiment, settings: Settings) -> dict[str, Path]:
    """Name -> file, for the files an experiment's folders hold (first name wins)."""
    found: dict[str, Path] = {}
    for folder in _folders(job, settings):
        if folder.is_dir():
            for path in sorted(folder.iterdir()):
                if path.is_file() and not path.is_symlink() and path.suffix in SUFFIXES:
                    found.setdefault(path.name, path)
    return found


def _resolved_spec(job: Any) -> str:
    """The experiment's spec with every default filled in, as YAML."""
    return dump_spec(stored_spec(job.spec))


@router.get(
    "/{experiment_id}/artifacts", response_model=ArtifactList, responses=error_responses(404, 422)
)
def list_artifacts(
    experiment_id: ExperimentId, owner: OwnerDep, store: StoreDep, settings: SettingsDep
) -> ArtifactList:
    """The files you can download, with their sizes."""
    job = store.get(experiment_id, owner)
    base, model = f"/v1/experiments/{job.id}/artifacts", f"/v1/experiments/{job.id}/model"
    resolved = len(_resolved_spec(job).encode())  # the bytes a download gets
    items = [ArtifactPublic(name=RESOLVED_SPEC, size=resolved, url=f"{base}/{RESOLVED_SPEC}")]
    items += [
        ArtifactPublic(name=name, size=path.stat().st_size, url=f"{base}/{name}")
        for name, path in _files(job, settings).items()
    ]
    items += [
        ArtifactPublic(name=name, size=path.stat().st_size, url=f"{model}/{name}")
        for name, path in model_files(job, settings).items()
    ]
    return ArtifactList(items=items)


@router.get(
    "/{experiment_id}/artifacts/{name}",
    response_class=Response,
    responses={
        200: {"description": "The file, as its suffix says.", "content": FILE_CONTENT},
        **error_responses(404, 422),
        413: {"model": ErrorPublic, "description": "The file is over max_download_bytes."},
    },
)
def download_artifact(
    experiment_id: ExperimentId,
    name: str,
    owner: OwnerDep,
    store: StoreDep,
    settings: SettingsDep,
    service: ServiceDep,
) -> Response:
    """One listed file."""
    job = store.get(experiment_id, owner)
    if name == RESOLVED_SPEC:
        return PlainTextResponse(_resolved_spec(job), media_type="application/yaml")
    path = _files(job, settings).get(name)
    if path is None:
        raise NotFoundError(f"experiment {experiment_id} has no artifact {name!r}.")
    check_download_size(path, name, service.max_download_bytes)
    return FileResponse(path, filename=name, media_type=MEDIA_TYPES[path.suffix])
