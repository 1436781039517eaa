"""What `--resume RUN_ID` may load, checked before anything is unpickled or unzipped.

The id must be an MLflow run id, its folder must lie inside this home's runs folder, the
MLflow run must record that folder as its own (`ppo_platform.run_dir`, set when the platform
created it), and the checkpoint files must lie inside it (no symlinks out).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ppo_platform.errors import RunNotFoundError, SpecError
from ppo_platform.settings import Settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.loader import load_spec
from ppo_platform.spec.names import check_run_id, is_inside, path_inside
from ppo_platform.tracking.remote import TrackingProcess, shared_tracking_process
from ppo_platform.training import checkpoints as ckpt

RecordedFolder = Callable[[str], "str | None"]


@dataclass(frozen=True)
class Resumable:
    run_dir: Path
    spec: ExperimentSpec
    checkpoint: ckpt.Checkpoint


def run_folder(settings: Settings, run_id: str) -> Path:
    """The folder of run `run_id` under the runs folder (id checked, path kept inside)."""
    return path_inside(settings.runs_dir, [check_run_id(run_id)], "run id")


def recorded_folder(process: TrackingProcess, settings: Settings) -> RecordedFolder:
    """The folder a run records as its own, asked of the tracking process (None if unknown)."""

    def ask(run_id: str) -> str | None:
        seq = process.request(
            "recorded_folder", awaited=True, uri=settings.tracking_uri, run_id=run_id
        )
        return process.wait(seq)["folder"]  # type: ignore[no-any-return]

    return ask


def owned_run(
    settings: Settings,
    run_id: str,
    recorded: RecordedFolder | None = None,
    overrides: tuple[str, ...] = (),
) -> tuple[Path, ExperimentSpec]:
    """The run's folder and stored spec (with `overrides`, `--set` style); RunNotFoundError if
    either is missing or the folder is not the platform's own (`recorded` reads the folder the
    MLflow run records; default: asked of this process's tracking process)."""
    recorded = recorded or recorded_folder(shared_tracking_process(), settings)
    run_dir = run_folder(settings, run_id)
    if not (run_dir / "spec.yaml").is_file():
        raise RunNotFoundError(
            f"no run folder for run {run_id!r} under {settings.runs_dir}: "
            "a run is found on the machine (PPO_PLATFORM_HOME) that started it."
        )
    if recorded(run_id) != str(run_dir):
        raise RunNotFoundError(
            f"run {run_id} is not a run this platform home created (its MLflow run does not "
            f"record the folder {run_dir}); nothing is loaded from it."
        )
    try:
        spec = load_spec(run_dir / "spec.yaml", overrides)
    except SpecError as error:
        raise RunNotFoundError(
            f"the stored spec of run {run_id} no longer validates:\n{error}"
        ) from error
    return run_dir, spec


def check_own_files(run_id: str, run_dir: Path, files: list[Path]) -> None:
    """Files about to be unpickled or unzipped lie inside the run's folder (no links out)."""
    if not all(is_inside(run_dir, path) and not path.is_symlink() for path in files):
        raise RunNotFoundError(
            f"run {run_id}'s file {files[0].name} is a link out of its folder; "
            "nothing is loaded from it."
        )


def resumable(settings: Settings, run_id: str, recorded: RecordedFolder | None = None) -> Resumable:
    """The run's folder, stored spec and last checkpoint; RunNotFoundError if any is missing
    or not the platform's own."""
    run_dir, spec = owned_run(settings, run_id, recorded)
    last = ckpt.latest_checkpoint(run_dir / "checkpoints")
    if last is None:
        raise RunNotFoundError(f"run {run_id} has no checkpoint to resume from.")
    check_own_files(run_id, run_dir, [last.model] + ([last.normalize] if last.normalize else []))
    if last.timesteps >= spec.budget.total_timesteps:
        raise RunNotFoundError(
            f"run {run_id} already trained {last.timesteps} of "
            f"{spec.budget.total_timesteps} env steps: nothing to resume."
        )
    return Resumable(run_dir, spec, last)
