"""An experiment as the REST API serves it: status, typed progress, diagnostics and result.

The job service stores progress, diagnostics and results as JSON; these models are their
contract (the API renders rows through them, the CLI's client reads responses back into them).
"""

from __future__ import annotations

import datetime as dt
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    Field,
    PlainSerializer,
    field_serializer,
)

from ppo_platform.spec.any_spec import AnyExperimentSpec
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.lm import LMExperimentSpec


def _as_utc(moment: dt.datetime) -> dt.datetime:
    return moment.astimezone(dt.timezone.utc)


# Always UTC with its offset, written `+00:00` (Python 3.10's `fromisoformat`, which generated
# clients use, does not read a `Z`).
UtcDateTime = Annotated[
    AwareDatetime,
    AfterValidator(_as_utc),
    PlainSerializer(lambda moment: moment.isoformat(), return_type=str, when_used="json"),
]


def as_utc(moment: dt.datetime) -> dt.datetime:
    """A stored moment in UTC with its offset (SQLite hands naive UTC datetimes back)."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=dt.timezone.utc)
    return _as_utc(moment)


class ExperimentStatus(str, Enum):
    """queued -> running -> succeeded | failed | cancelled."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


class ExperimentKind(str, Enum):
    """What the spec asks for, from its sections: one run, a batch of seeds (budget.seeds), a
    sweep or a tuning study."""

    RUN = "run"
    SEEDS = "seeds"
    SWEEP = "sweep"
    TUNE = "tune"


TERMINAL_STATUSES = frozenset(
    {ExperimentStatus.SUCCEEDED, ExperimentStatus.FAILED, ExperimentStatus.CANCELLED}
)


class RunProgress(BaseModel):
    """A run (and a study before its first trial): env steps trained so far; a batch of seeds:
    the env steps of all its seeds together."""

    timesteps: int = Field(ge=0)
    total_timesteps: int = Field(ge=0)


class SweepProgress(BaseModel):
    """A sweep: runs finished so far."""

    runs_done: int = Field(ge=0)
    runs_total: int = Field(ge=0)


class TuneProgress(BaseModel):
    """A study: trials finished (complete, pruned or failed), running, and the best so far."""

    trials_done: int = Field(ge=0)
    trials_total: int = Field(ge=0)
    trials_running: int = Field(0, ge=0)
    best_value: float | None = Field(None, description="Null before a trial completes.")
    best_trial: int | None = None


Progress = RunProgress | SweepProgress | TuneProgress


class Diagnostics(BaseModel):
    """The latest PPO update's health signals (null before the first update or when not
    finite)."""

    fps: float | None = None
    ep_rew_mean: float | None = None
    approx_kl: float | None = None
    clip_fraction: float | None = None
    explained_variance: float | None = None
    kl_beta: float | None = Field(
        None,
        description="The adaptive KL penalty's beta (ppo_kl; ppo_lm: the penalty to the "
        "reference).",
    )
    kl_ref: float | None = Field(
        None, description="ppo_lm: lm/kl_ref, the KL to the reference model (nats per response)."
    )


class RunResultPublic(BaseModel):
    """How a run ended."""

    outcome: Literal["completed", "stopped_by_alert", "cancelled"]
    run_id: str = Field(description="The MLflow run id.")
    timesteps: int
    final_eval_mean: float | None
    final_eval_std: float | None
    alerts: int
    seconds: float


class SweepRunResult(BaseModel):
    """One member of a sweep."""

    name: str
    status: str = Field(description="The member's outcome, e.g. completed or failed.")
    run_id: str | None
    final_eval_mean: float | None
    error: str | None


class SweepResultPublic(BaseModel):
    """How a sweep (or a batch of seeds) ended: its parent MLflow run and every member."""

    parent_run_id: str | None
    runs: list[SweepRunResult]
    failed: int = Field(description="Members that failed.")


class TuneResultPublic(BaseModel):
    """How a study ended: the best trial and its spec (YAML)."""

    parent_run_id: str | None
    study_name: str
    best_trial: int | None
    best_value: float | None
    best_spec: str = Field(description="The best trial's spec as YAML, ready to `run`.")


Result = RunResultPublic | SweepResultPublic | TuneResultPublic


class ExperimentLinks(BaseModel):
    experiment: str
    events: str
    alerts: str
    artifacts: str
    metrics: str
    cancel: str


class ExperimentPublic(BaseModel):
    """An experiment: status, progress, diagnostics, MLflow ids, result or error."""

    id: str = Field(description="32 hex digits.")
    kind: ExperimentKind
    status: ExperimentStatus
    name: str
    spec_hash: str
    total_timesteps: int = Field(description="Env steps of every run the spec starts, in all.")
    created_at: UtcDateTime
    started_at: UtcDateTime | None
    finished_at: UtcDateTime | None
    progress: Progress | None = Field(
        description="A run: timesteps of total_timesteps. A sweep: runs_done of runs_total. A "
        "study: trials_done of trials_total, trials_running, and the best so far."
    )
    diagnostics: Diagnostics
    alerts: int = Field(description="Diagnostics alerts raised so far.")
    mlflow_run_id: str | None
    mlflow_run_ids: list[str]
    result: Result | None = Field(description="Null until the experiment ends.")
    resolved: dict[str, str] | None = Field(
        None,
        description="A run: what it resolved when it started (vectorization and why, env "
        "packages and library versions, device, torch threads; a language-model run: its "
        "model, dtype, tokenizer, reference and reward in place of envs). Null before it "
        "starts.",
    )
    error: str | None
    cancel_requested: bool
    attempts: int
    links: ExperimentLinks


class ExperimentList(BaseModel):
    items: list[ExperimentPublic]
    next_cursor: str | None = Field(None, description="Pass as `cursor` for the next page.")


class ValidationPublic(BaseModel):
    """A valid spec: its kind and every field with its default filled in."""

    kind: ExperimentKind
    name: str
    spec_hash: str
    spec: AnyExperimentSpec

    @field_serializer("spec")
    def _resolved(self, spec: ExperimentSpec | LMExperimentSpec) -> dict[str, Any]:
        return spec.resolved()  # by alias (`evaluation.async`), as the spec is written


def progress_of(data: dict[str, Any] | None) -> Progress | None:
    """The typed progress of a stored progress dict (None when it is empty)."""
    if not data:
        return None
    for model in (TuneProgress, SweepProgress, RunProgress):
        if all(name in data for name, f in model.model_fields.items() if f.is_required()):
            return model.model_validate(data)
    return None
