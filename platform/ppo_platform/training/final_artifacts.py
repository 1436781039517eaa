"""What a finished run leaves: the final model (its last checkpoint, stored once), its
evaluation videos, the alerts document, the doctor's diagnosis and the training-curves plot,
handed to the tracking process."""

from __future__ import annotations

import json
from pathlib import Path

from stable_baselines3.common.base_class import BaseAlgorithm

from ppo_platform.doctor import Diagnosis
from ppo_platform.health import DiagnosticsMonitor
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.tracking.remote import RemoteRun
from ppo_platform.training import checkpoints as ckpt
from ppo_platform.training.diagnosis import write_diagnosis
from ppo_platform.training.monitoring import alerts_document
from ppo_platform.training.play import evaluation_videos


def log_final_artifacts(
    tracker: RemoteRun,
    spec: ExperimentSpec,
    monitor: DiagnosticsMonitor,
    model: BaseAlgorithm,
    defer_plot: bool = False,
    diagnosis: Diagnosis | None = None,
) -> None:
    """final/model.zip (+ vecnormalize.pkl) linked to the checkpoint of `model`'s last step,
    with `evaluation.video` its evaluation videos, alerts.json and training_curves.png, each
    logged to the run. model.zip loads in plain stable-baselines3 (nothing of this project
    is pickled in it). `defer_plot`: the plot may be drawn after the run's close is answered
    (see RemoteRun.render_plot)."""
    run_dir = tracker.run_dir
    final = run_dir / "final"
    final.mkdir(parents=True, exist_ok=True)
    linked = ckpt.link_final(run_dir / "checkpoints", model.num_timesteps, final)
    for path in linked:
        tracker.log_artifact(path, "model")  # the final checkpoint, stored once
    if spec.evaluation.video:
        stats = final / "vecnormalize.pkl" if len(linked) > 1 else None
        for path in evaluation_videos(model, spec, stats, run_dir / "videos"):
            tracker.log_artifact(path, "videos")
    alerts_path: Path = run_dir / "alerts.json"
    alerts_path.write_text(json.dumps(alerts_document(monitor), indent=2))
    tracker.log_artifact(alerts_path, "diagnostics")
    if diagnosis is not None:  # the doctor's causes (docs/guides/diagnostics.md)
        tracker.log_artifact(write_diagnosis(diagnosis, run_dir), "diagnostics")
    tracker.flush()
    tracker.render_plot(
        run_dir / "training_curves.png",
        title=f"{spec.name} ({spec.algorithm}, {spec.env.id})",
        kl_alert=spec.diagnostics.kl_alert,
        deferred=defer_plot,
    )
