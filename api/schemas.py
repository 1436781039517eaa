"""Request and response bodies: `XCreate` comes in, `XPublic` goes out; one error shape."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import BaseModel, Field


class IssuePublic(BaseModel):
    """One thing wrong with an input: where, what it held, and what to do instead."""

    path: str
    message: str
    value: Any = None
    line: int | None = None
    column: int | None = None
    fix: str | None = None
    rule: str | None = Field(None, description="The refusal rule, for unsafe settings.")


class ErrorPublic(BaseModel):
    """Every error response: its kind, a sentence, and for bad input every issue."""

    type: str = Field(description="The error's kind, e.g. SpecError, NotFoundError.")
    message: str
    issues: list[IssuePublic] = Field(default_factory=list)


class HealthPublic(BaseModel):
    status: Literal["ok"] = "ok"


class ReadyPublic(BaseModel):
    status: Literal["ready", "unavailable"]
    job_store: bool
    tracking_store: bool
    dispatcher: bool
    stores: dict[str, bool] = Field(
        default_factory=dict,
        description="Each store by name: job_store, tracking_store, optuna_store, and "
        "ray_cluster with the Ray executor.",
    )


class ValidationPublic(BaseModel):
    """A valid spec: its kind and every field with its default filled in."""

    kind: Literal["run", "sweep", "tune"]
    name: str
    spec_hash: str
    spec: dict[str, Any]


class PlanCreate(BaseModel):
    env_id: str = Field(min_length=1, max_length=200, description="A registered gymnasium id.")
    budget: int = Field(gt=0, le=10**10, description="Training budget in env steps.")
    use_case: str = Field("auto", max_length=40)
    overrides: list[str] = Field(default_factory=list, max_length=50)


class PlanPublic(BaseModel):
    spec_yaml: str
    markdown: str
    summary: str
    warnings: list[str]
    plan_only: bool


class ExperimentLinks(BaseModel):
    experiment: str
    events: str
    alerts: str
    artifacts: str
    cancel: str


class ExperimentPublic(BaseModel):
    """An experiment: status, progress, diagnostics, MLflow ids, result or error."""

    id: str
    kind: Literal["run", "sweep", "tune"]
    status: Literal["queued", "running", "succeeded", "failed", "cancelled"]
    name: str
    spec_hash: str
    total_timesteps: int
    created_at: dt.datetime
    started_at: dt.datetime | None
    finished_at: dt.datetime | None
    progress: dict[str, Any] = Field(
        description="A run: timesteps, total_timesteps. A sweep: runs_done, runs_total. A "
        "study: trials_done, trials_total, trials_running, best_value, best_trial (the best "
        "so far while it runs; null before a trial completes)."
    )
    diagnostics: dict[str, Any]
    alerts: int
    mlflow_run_id: str | None
    mlflow_run_ids: list[str]
    result: dict[str, Any]
    error: str | None
    cancel_requested: bool
    attempts: int
    links: ExperimentLinks


class ExperimentList(BaseModel):
    items: list[ExperimentPublic]
    next_cursor: str | None = Field(None, description="Pass as `cursor` for the next page.")


class EventPublic(BaseModel):
    id: int
    kind: str
    data: dict[str, Any]
    created_at: dt.datetime


class EventList(BaseModel):
    items: list[EventPublic]


class MetricPoint(BaseModel):
    step: int
    value: float | None


class MetricHistory(BaseModel):
    key: str
    run_id: str | None
    points: list[MetricPoint]


class ArtifactPublic(BaseModel):
    name: str
    size: int
    url: str


class ArtifactList(BaseModel):
    items: list[ArtifactPublic]


class EnvList(BaseModel):
    """The environment ids this service can train, and the env packages that registered them."""

    env_ids: list[str] = Field(description="Registered ids (sorted) whose extras are installed.")
    env_packages: list[str] = Field(
        description="Env packages imported by this service (its operator's "
        "PPO_PLATFORM_ENV_PACKAGES, and ale_py when installed)."
    )
