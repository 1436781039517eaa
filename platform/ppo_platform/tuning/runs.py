"""MLflow runs of a study: a parent run per study, a child run per trial, and under each trial
the training run of every seed (created by `runner.run_spec`).

    tune-<study>                 params: the tune section; artifacts: best_spec.yaml, summary, plots
      trial-3                    params: the trial's full spec; metrics: value, per-seed values,
        trial-3-seed-0           eval curve, alerts; tags: state (COMPLETE/PRUNED/FAIL), reason
        trial-3-seed-1           the real training runs: learning curves, diagnostics, model
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ppo_platform.spec.experiment import ExperimentSpec, flatten
from ppo_platform.tracking import tags as tag
from ppo_platform.tracking.gateway import retry, tracking_client
from ppo_platform.tracking.liveness import claim_run, owner_tags
from ppo_platform.tracking.tracker import RunTracker, ensure_experiment

TRIAL_STATUS = {"COMPLETE": "FINISHED", "PRUNED": "KILLED", "FAIL": "FAILED"}


def open_study_run(
    tracking_uri: str,
    spec: ExperimentSpec,
    study_name: str,
    storage_label: str,
    existing_run_id: str | None,
    artifact_root: Path | None = None,
) -> RunTracker:
    """Reopen the study's parent run (a resumed study) or create it; returns its tracker."""
    from mlflow.exceptions import MlflowException

    client = tracking_client(tracking_uri)
    if existing_run_id:
        try:
            retry(lambda: client.update_run(existing_run_id, status="RUNNING"))
            claim_run(client, existing_run_id)
            return RunTracker(tracking_uri, existing_run_id)
        except MlflowException:
            pass  # another tracking store than the one that started the study: start afresh
    assert spec.tune is not None
    tags = {
        tag.RUN_NAME: f"tune-{study_name}",
        tag.KIND: "study",
        tag.STUDY: study_name,
        tag.STORAGE: storage_label,
        tag.SPEC_HASH: spec.spec_hash(),
        tag.ENV_ID: spec.env.id,
        **owner_tags(),
    }
    experiment = ensure_experiment(client, spec.experiment_name, artifact_root)
    run = retry(lambda: client.create_run(experiment, tags=tags))
    tracker = RunTracker(tracking_uri, run.info.run_id)
    tune = spec.tune.model_dump(mode="json")
    tune["space"] = json.dumps(tune["space"])
    tracker.log_params({f"tune.{k}": v for k, v in flatten(tune).items()})
    return tracker


class TrialRun:
    """The MLflow run of one trial, a child of the study run."""

    def __init__(self, tracker: RunTracker) -> None:
        self.tracker = tracker
        self.run_id = tracker.run_id

    @classmethod
    def start(
        cls,
        tracking_uri: str,
        parent_run_id: str,
        study_name: str,
        number: int,
        params: dict[str, Any],
        spec: ExperimentSpec | None,
    ) -> TrialRun:
        client = tracking_client(tracking_uri)
        parent = retry(lambda: client.get_run(parent_run_id))
        tags = {
            tag.RUN_NAME: f"trial-{number}",
            tag.PARENT_RUN_ID: parent_run_id,
            tag.KIND: "trial",
            tag.STUDY: study_name,
            tag.TRIAL_NUMBER: str(number),
            tag.TUNED_PARAMS: json.dumps(params)[:5000],
        }
        if spec is not None:
            tags[tag.SPEC_HASH] = spec.spec_hash()
        run = retry(lambda: client.create_run(parent.info.experiment_id, tags=tags))
        trial_run = cls(RunTracker(tracking_uri, run.info.run_id))
        try:
            trial_run.tracker.log_params(flatten(spec.resolved()) if spec is not None else params)
        except BaseException as error:  # Ctrl-C too: the run exists, so it is closed, not RUNNING
            interrupted = isinstance(error, KeyboardInterrupt)
            trial_run.finish("FAIL", None, 0, 0, "interrupted" if interrupted else repr(error))
            raise
        return trial_run

    def seed_tags(self, study_name: str, number: int, seed: int) -> dict[str, str]:
        """Tags of a seed's training run (a child of this trial run)."""
        return {
            tag.RUN_NAME: f"trial-{number}-seed-{seed}",
            tag.KIND: "seed",
            tag.STUDY: study_name,
            tag.TRIAL_NUMBER: str(number),
            tag.SEED: str(seed),
        }

    def log_seed(self, index: int, value: float | None, timesteps: int, alerts: int) -> None:
        metrics = {"tune/seed_timesteps": float(timesteps), "tune/seed_alerts": float(alerts)}
        if value is not None:
            metrics["tune/seed_value"] = value
        self.tracker.log_metrics(metrics, index)

    def log_curve(self, curve: list[tuple[int, float]]) -> None:
        """The trial's learning curve: the seeds' aggregate eval return per evaluation."""
        for step, value in curve:
            self.tracker.log_metrics({"eval/mean_reward": value}, step)

    def finish(
        self, state: str, value: float | None, timesteps: int, alerts: int, reason: str = ""
    ) -> None:
        metrics = {"tune/timesteps": float(timesteps), "diagnostics/alerts_total": float(alerts)}
        if value is not None:
            metrics["tune/value"] = value
        self.tracker.log_metrics(metrics, 0)
        tags = {tag.TRIAL_STATE: state}
        if reason:
            tags[tag.TRIAL_REASON] = reason
        self.tracker.set_tags(tags)
        self.tracker.finish(TRIAL_STATUS[state])
