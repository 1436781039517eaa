"""Checkpoint files of a run: model + VecNormalize statistics, named by env step."""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from stable_baselines3.common.base_class import BaseAlgorithm

_NAME = re.compile(r"^step_(\d{12})\.zip$")


@dataclass(frozen=True)
class Checkpoint:
    timesteps: int
    model: Path
    normalize: Path | None


def model_path(folder: Path, timesteps: int) -> Path:
    return folder / f"step_{timesteps:012d}.zip"


def normalize_path(folder: Path, timesteps: int) -> Path:
    return folder / f"step_{timesteps:012d}_vecnormalize.pkl"


def list_checkpoints(folder: Path) -> list[Checkpoint]:
    """Complete checkpoints in `folder`, oldest first."""
    found = []
    for path in folder.glob("step_*.zip") if folder.is_dir() else []:
        match = _NAME.match(path.name)
        if match:
            steps = int(match.group(1))
            norm = normalize_path(folder, steps)
            found.append(Checkpoint(steps, path, norm if norm.exists() else None))
    return sorted(found, key=lambda c: c.timesteps)


def latest_checkpoint(folder: Path) -> Checkpoint | None:
    checkpoints = list_checkpoints(folder)
    return checkpoints[-1] if checkpoints else None


def prune_checkpoints(folder: Path, keep_last: int) -> None:
    """Delete all but the newest `keep_last` checkpoints."""
    for old in list_checkpoints(folder)[:-keep_last]:
        old.model.unlink(missing_ok=True)
        if old.normalize:
            old.normalize.unlink(missing_ok=True)


def link_or_copy(source: Path, target: Path) -> None:
    """`target` as a hard link to `source` (the same bytes, no second copy on disk), or a copy
    where links cannot be made; an older `target` is replaced."""
    target.unlink(missing_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def link_final(folder: Path, timesteps: int, final: Path) -> list[Path]:
    """`final/model.zip` (and `final/vecnormalize.pkl` if the run normalizes) as links to the
    checkpoint at `timesteps`: the final model is stored once, whatever names it has."""
    linked = [final / "model.zip"]
    link_or_copy(model_path(folder, timesteps), linked[0])
    stats = normalize_path(folder, timesteps)
    if stats.exists():
        linked.append(final / "vecnormalize.pkl")
        link_or_copy(stats, linked[1])
    return linked


def save_checkpoint(model: BaseAlgorithm, folder: Path, steps: int, keep_last: int) -> None:
    """Save `model` (and its VecNormalize statistics) as the checkpoint of `steps`, keeping
    the last `keep_last`. Written in a side folder, then moved into place (normalization
    stats first): a kill mid-write never leaves a partial checkpoint for a resume to load."""
    partial = folder / ".partial"
    partial.mkdir(parents=True, exist_ok=True)
    path = model_path(folder, steps)
    env = model.get_vec_normalize_env()
    if env is not None:
        stats = normalize_path(folder, steps)
        env.save(str(partial / stats.name))
        os.replace(partial / stats.name, stats)
    model.save(partial / path.name)
    os.replace(partial / path.name, path)
    prune_checkpoints(folder, keep_last)
