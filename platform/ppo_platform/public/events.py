"""What happens to an experiment, as the REST API serves it: one schema per event kind (the
`kind` field tells them apart), and an experiment's metrics."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter

from ppo_platform.public.experiments import (
    Diagnostics,
    ExperimentStatus,
    RunProgress,
    SweepProgress,
    TuneProgress,
    UtcDateTime,
)

SEED_FIELD = Field(None, description="A batch of seeds: the seed whose run this is about.")


class TrainingUpdate(Diagnostics):
    """A run's progress after a PPO update, with the update's health signals."""

    timesteps: int = Field(ge=0)
    total_timesteps: int = Field(ge=0)
    seed: int | None = SEED_FIELD


class EvaluationData(RunProgress):
    eval_mean: float | None = Field(description="Mean evaluation return (null if not finite).")
    seed: int | None = SEED_FIELD


class AlertData(RunProgress):
    message: str = Field(description="What the diagnostics monitor saw, and what to do.")
    seed: int | None = SEED_FIELD


class StatusData(BaseModel):
    status: ExperimentStatus
    error: str | None = Field(None, description="Why it failed.")
    reason: str | None = Field(None, description="Why it was queued again.")


class LogData(BaseModel):
    message: str
    parent_run_id: str | None = Field(
        None, description="A sweep's or study's MLflow parent run, when it starts."
    )


class SweepMemberPublic(BaseModel):
    name: str
    key: str = Field(description="The member's grid point and seed (stable across restarts).")
    status: str = Field(description="How it ended, e.g. completed or failed.")
    run_id: str | None
    final_eval_mean: float | None
    error: str | None


class MemberData(SweepProgress):
    member: SweepMemberPublic
    message: str


class TrialData(BaseModel):
    number: int
    state: str = Field(description="COMPLETE, PRUNED or FAIL.")
    value: float | None = Field(description="The trial's score (COMPLETE only).")
    run_id: str | None = Field(description="The trial's MLflow run.")
    reason: str = Field(description="Why it was pruned or failed (empty when complete).")
    message: str


class VerifyStartedData(BaseModel):
    stage: Literal["started"]
    trials: list[int] = Field(description="The trials re-run on held-out seeds.")
    seeds: list[int] = Field(description="The held-out seeds.")
    reused: list[int] = Field(description="Trials verified earlier (a resumed study): not re-run.")
    message: str


class TrialVerifiedData(BaseModel):
    stage: Literal["trial"]
    number: int = Field(description="The trial verified.")
    searched_value: float | None = Field(description="Its score in the search.")
    held_out_value: float | None = Field(
        description="Its held-out seeds' scores combined as the search combines seeds "
        "(`tune.aggregate`: their mean, or the quantile)."
    )
    seed_values: list[float | None] = Field(description="The score on each held-out seed.")
    ci95: list[float | None] | None = Field(
        description="Percentile-bootstrap 95% interval of the mean of `seed_values` (never "
        "outside the observed scores); null with one held-out seed."
    )
    run_id: str | None = Field(description="The verification's MLflow run.")
    error: str = Field(description="What stopped it (empty when it ran).")
    reused: bool = Field(description="From an earlier run of the study.")
    message: str


class _EventBase(BaseModel):
    id: int = Field(description="The SSE event id (pass as Last-Event-ID to resume after it).")
    created_at: UtcDateTime


class ProgressEventPublic(_EventBase):
    """A run's PPO update (at most one a second) or a study's new trial count."""

    kind: Literal["progress"]
    data: TrainingUpdate | TuneProgress


class EvaluationEvent(_EventBase):
    kind: Literal["eval"]
    data: EvaluationData


class AlertEvent(_EventBase):
    kind: Literal["alert"]
    data: AlertData


class StatusEvent(_EventBase):
    kind: Literal["status"]
    data: StatusData


class LogEvent(_EventBase):
    """A line for people: a sweep or study starting, a warning, a resume starting over."""

    kind: Literal["log"]
    data: LogData


class MemberEvent(_EventBase):
    """A sweep member finished."""

    kind: Literal["member"]
    data: MemberData


class TrialEvent(_EventBase):
    """A study's trial finished."""

    kind: Literal["trial"]
    data: TrialData


class VerifyEvent(_EventBase):
    """A study's held-out verification: it begins (`stage` started), or one trial's result
    (`stage` trial)."""

    kind: Literal["verify"]
    data: Annotated[VerifyStartedData | TrialVerifiedData, Field(discriminator="stage")]


EventPublic = Annotated[
    ProgressEventPublic
    | EvaluationEvent
    | AlertEvent
    | StatusEvent
    | LogEvent
    | MemberEvent
    | TrialEvent
    | VerifyEvent,
    Field(discriminator="kind"),
]
EVENT_ADAPTER: TypeAdapter[Any] = TypeAdapter(EventPublic)


def event_from(event_id: int, kind: str, data: dict[str, Any], created_at: Any) -> EventPublic:
    """The typed event of a stored one."""
    body = {"id": event_id, "kind": kind, "data": data, "created_at": created_at}
    return EVENT_ADAPTER.validate_python(body)  # type: ignore[no-any-return]


class EventList(BaseModel):
    items: list[EventPublic]


class MetricPoint(BaseModel):
    step: int = Field(description="Env steps trained when it was logged.")
    value: float | None = Field(description="Null if not finite.")


class MetricHistory(BaseModel):
    key: str
    run_id: str
    points: list[MetricPoint]


class MetricList(BaseModel):
    """The metric keys of the experiment's MLflow run (none before it has one)."""

    run_id: str | None
    keys: list[str]
