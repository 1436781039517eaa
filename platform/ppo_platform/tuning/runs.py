"""MLflow runs of a study: a parent run per study, a child run per trial, and under each trial
the training run of every seed (created by `runner.run_spec`).

    tune-<study>                 params: the tune section; artifacts: best_spec.yaml, summary, plots
      trial-3                    params: the trial's full spec; metrics: value, per-seed values,
        trial-3-seed-0           eval curve, alerts; tags: state (COMPLETE/PRUNED/FAIL), reason;
                                 KILLED when an interrupt stopped it
        trial-3-seed-1           the real training runs: learning curves, diagnostics, model
"""

from __future__ import annotations

import json
from typing import Any

from ppo_platform.errors import TrackingError
from ppo_platform.settings import Settings
from ppo_platform.spec.experiment import flatten
from ppo_platform.spec.workloads import AnySpec, spec_subject
from ppo_platform.tracking import tags as tag
from ppo_platform.tracking.remote import RemoteRun, interrupted_tags, shared_tracking_process

STUDY_PREFIX = "tune-"


def study_label(study_name: str) -> str:
    """The study's parent run name and default output folder: `tune-<study>`, once (a study
    already named `tune-x` is `tune-x`, not `tune-tune-x`)."""
    return study_name if study_name.startswith(STUDY_PREFIX) else f"{STUDY_PREFIX}{study_name}"


TRIAL_STATUS = {"COMPLETE": "FINISHED", "PRUNED": "KILLED", "FAIL": "FAILED"}


def open_study_run(
    settings: Settings,
    spec: AnySpec,
    study_name: str,
    storage_label: str,
    existing_run_id: str | None,
) -> RemoteRun:
    """Reopen the study's parent run (a resumed study) or create it; returns its handle."""
    if existing_run_id:
        run = RemoteRun.reopen(
            shared_tracking_process(), settings, existing_run_id, None, {}, kind="study"
        )
        try:
            run.run_id  # noqa: B018  (the answer: is the run in this store?)
            return run
        except TrackingError:
            pass  # another tracking store than the one that started the study: start afresh
    assert spec.tune is not None
    tags = {
        tag.RUN_NAME: study_label(study_name),
        tag.KIND: "study",
        tag.STUDY: study_name,
        tag.STORAGE: storage_label,
        tag.SPEC_HASH: spec.spec_hash(),
        tag.ENV_ID: spec_subject(spec),  # a ppo_lm study: its policy folder (as its runs)
    }
    tune = spec.tune.model_dump(mode="json")
    tune["space"] = json.dumps(tune["space"])
    params = {f"tune.{k}": v for k, v in flatten(tune).items()}
    return RemoteRun.open_kind(
        "study", tags, experiment=spec.experiment_name, params=params, settings=settings
    )


class TrialRun:
    """The MLflow run of one trial, a child of the study run."""

    def __init__(self, tracker: RemoteRun) -> None:
        self.tracker = tracker

    @property
    def run_id(self) -> str:
        return self.tracker.run_id

    @classmethod
    def start(
        cls,
        settings: Settings,
        parent_run_id: str,
        study_name: str,
        number: int,
        params: dict[str, Any],
        spec: AnySpec | None,
    ) -> TrialRun:
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
        values = flatten(spec.resolved()) if spec is not None else params
        return cls(RemoteRun.open_kind("trial", tags, params=values, settings=settings))

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

    def log_values(self, values: dict[str, float]) -> None:
        """The trial's value per objective (`tune/final_return`, `tune/steps_to_threshold`)."""
        self.tracker.log_metrics({f"tune/{name}": value for name, value in values.items()}, 0)

    def log_curve(self, curve: list[tuple[int, float]]) -> None:
        """The trial's learning curve: the seeds' aggregate eval return per evaluation."""
        for step, value in curve:
            self.tracker.log_metrics({"eval/mean_reward": value}, step)

    def finish(
        self,
        state: str,
        value: float | None,
        timesteps: int,
        alerts: int,
        reason: str = "",
        interrupt: KeyboardInterrupt | None = None,
    ) -> None:
        """Close the trial run: its Optuna state as a tag, its MLflow status from the state,
        except an interrupted trial (Optuna: FAIL), which is KILLED with the interrupt's tags
        as every run an interrupt closes."""
        metrics = {"tune/timesteps": float(timesteps), "diagnostics/alerts_total": float(alerts)}
        if value is not None:
            metrics["tune/value"] = value
        self.tracker.log_metrics(metrics, 0)
        tags = {tag.TRIAL_STATE: state}
        if reason:
            tags[tag.TRIAL_REASON] = reason
        if interrupt is not None:
            self.tracker.finish("KILLED", {**tags, **interrupted_tags(interrupt)})
            return
        self.tracker.finish(TRIAL_STATUS[state], tags)
