"""What happens to an experiment, as the REST API serves it: one schema per event kind (the
`kind` field tells them apart), and an experiment's metrics."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter

from ppo_platform.public.experiments import (
    Diagnostics,
    ExperimentStatus,
    RunProgress,
    TuneProgress,
    UtcDateTime,
)


class TrainingUpdate(Diagnostics):
    """A run's progress after a PPO update, with the update's health signals."""

    timesteps: int = Field(ge=0)
    total_timesteps: int = Field(ge=0)


class EvaluationData(RunProgress):
    eval_mean: float | None = Field(description="Mean evaluation return (null if not finite).")


class AlertData(RunProgress):
    message: str = Field(description="What the diagnostics monitor saw, and what to do.")


class StatusData(BaseModel):
    status: ExperimentStatus
    error: str | None = Field(None, description="Why it failed.")
    reason: str | None = Field(None, description="Why it was queued again.")


class LogData(BaseModel):
    message: str


class _EventBase(BaseModel):
    id: int = Field(description="The SSE event id (pass as Last-Event-ID to resume after it).")
    created_at: UtcDateTime


class ProgressEvent(_EventBase):
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
    """A line of a sweep's log, or a note such as a resume starting over."""

    kind: Literal["log"]
    data: LogData


EventPublic = Annotated[
    ProgressEvent | EvaluationEvent | AlertEvent | StatusEvent | LogEvent,
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
