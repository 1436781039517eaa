"""What a finished run leaves: the final model (its last checkpoint, stored once), the alerts
document and the training-curves plot, handed to the tracking process."""

from __future__ import annotations

import json
from pathlib import Path

from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.tracking.remote import RemoteRun
from ppo_platform.training import checkpoints as ckpt
from ppo_platform.training.monitoring import alerts_document
from trainers.diagnostics import DiagnosticsMonitor


def log_final_artifacts(
    tracker: RemoteRun, spec: ExperimentSpec, monitor: DiagnosticsMonitor, steps: int
) -> None:
    """final/model.zip (+ vecnormalize.pkl) linked to the checkpoint at `steps`, alerts.json
    and training_curves.png, each logged to the run."""
    run_dir = tracker.run_dir
    final = run_dir / "final"
    final.mkdir(parents=True, exist_ok=True)
    for path in ckpt.link_final(run_dir / "checkpoints", steps, final):
        tracker.log_artifact(path, "model")  # the final checkpoint, stored once
    alerts_path: Path = run_dir / "alerts.json"
    alerts_path.write_text(json.dumps(alerts_document(monitor), indent=2))
    tracker.log_artifact(alerts_path, "diagnostics")
    tracker.flush()
    tracker.render_plot(
        run_dir / "training_curves.png",
        title=f"{spec.name} ({spec.algorithm}, {spec.env.id})",
        kl_alert=spec.diagnostics.kl_alert,
    )
