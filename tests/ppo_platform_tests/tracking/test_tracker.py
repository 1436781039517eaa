"""RunTracker without a writer process, and the tag names the platform shares with MLflow."""

from __future__ import annotations

from pathlib import Path

from ppo_platform.tracking import tags
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


def test_mlflow_system_tags_are_spelled_as_mlflow_spells_them():
    from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID, MLFLOW_RUN_NAME

    assert (tags.RUN_NAME, tags.PARENT_RUN_ID) == (MLFLOW_RUN_NAME, MLFLOW_PARENT_RUN_ID)
