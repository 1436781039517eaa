"""RunTracker without a writer process writes metrics itself (mypy found this path broken)."""

from __future__ import annotations

from pathlib import Path

from ppo_platform.tracking.gateway import tracking_client
from ppo_platform.tracking.tracker import RunTracker


def test_tracker_without_writer_process_stores_metrics_on_flush(tmp_path: Path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = tracking_client(uri)
    experiment_id = client.create_experiment("t", artifact_location=str(tmp_path / "artifacts"))
    run_id = client.create_run(experiment_id).info.run_id
    tracker = RunTracker(uri, run_id, flush_seconds=3600, background=False)

    tracker.log_metrics({"train/approx_kl": 0.25}, step=64)
    tracker.flush()

    assert tracker.stored_history(("train/approx_kl",)) == {"train/approx_kl": [(64, 0.25)]}
