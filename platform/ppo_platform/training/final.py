"""What a finished run leaves: the trained agent a user takes away (final/) and its alerts.

`model.zip` loads in plain stable-baselines3 (nothing of this project is pickled in it);
`vecnormalize.pkl` holds the observation statistics when the run normalized them; with
`evaluation.video`, the final policy's evaluation episodes are filmed into videos/.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecNormalize

from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.training.monitoring import alerts_document
from ppo_platform.training.play import evaluation_videos
from trainers.diagnostics import DiagnosticsMonitor

LogArtifact = Callable[[Path, str], None]


def save_final_agent(
    model: BaseAlgorithm, spec: ExperimentSpec, run_dir: Path, log_artifact: LogArtifact
) -> None:
    """Write the model, its statistics and the videos, each handed to `log_artifact`."""
    final = run_dir / "final"
    final.mkdir(parents=True, exist_ok=True)
    model.save(final / "model.zip")
    log_artifact(final / "model.zip", "model")
    norm = model.get_vec_normalize_env()
    stats = final / "vecnormalize.pkl" if isinstance(norm, VecNormalize) else None
    if isinstance(norm, VecNormalize) and stats is not None:
        norm.save(str(stats))
        log_artifact(stats, "model")
    if spec.evaluation.video:
        for path in evaluation_videos(model, spec, stats, run_dir / "videos"):
            log_artifact(path, "videos")


def save_alerts(monitor: DiagnosticsMonitor, run_dir: Path, log_artifact: LogArtifact) -> None:
    """The run's diagnostics alerts as alerts.json (an MLflow artifact under diagnostics/)."""
    path = run_dir / "alerts.json"
    path.write_text(json.dumps(alerts_document(monitor), indent=2))
    log_artifact(path, "diagnostics")
