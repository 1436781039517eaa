"""Request and response bodies: `XCreate` comes in, `XPublic` goes out; one error shape.

The bodies a client reads back (experiments, events, metrics, errors) live in
`ppo_platform.public`, shared with the CLI's client; the API's own are here.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import Path
from pydantic import BaseModel, ConfigDict, Field

from ppo_platform.doctor import CauseId
from ppo_platform.planner.use_cases import UseCaseName
from ppo_platform.public import (
    ErrorPublic,
    EventList,
    EventPublic,
    ExperimentKind,
    ExperimentLinks,
    ExperimentList,
    ExperimentPublic,
    ExperimentStatus,
    IssuePublic,
    MetricHistory,
    MetricList,
    MetricPoint,
    ValidationPublic,
)
from ppo_platform.spec.experiment import ENV_ID_PATTERN

__all__ = [
    "ArtifactList",
    "ArtifactPublic",
    "CausePublic",
    "DiagnosisPublic",
    "ErrorPublic",
    "EventList",
    "EventPublic",
    "ExperimentId",
    "ExperimentKind",
    "ExperimentLinks",
    "ExperimentList",
    "ExperimentPublic",
    "ExperimentStatus",
    "HealthPublic",
    "IssuePublic",
    "MetricHistory",
    "MetricList",
    "MetricPoint",
    "PlanCreate",
    "PlanPublic",
    "ReadyPublic",
    "UseCaseName",
    "ValidationPublic",
]


# Experiment ids are uuid4 hex: a malformed one is a 422, an unknown one a 404.
ExperimentId = Annotated[
    str, Path(pattern=r"^[0-9a-f]{32}$", description="The experiment's id (32 hex digits).")
]


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


class PlanCreate(BaseModel):
    """An env and a budget to plan a run for (strict: `"100"` is not a budget)."""

    model_config = ConfigDict(strict=True, extra="forbid")

    env_id: str | None = Field(
        None,
        min_length=1,
        max_length=128,
        pattern=ENV_ID_PATTERN,
        description="A registered gymnasium id, e.g. CartPole-v1 (every use case but rlhf and "
        "reasoning).",
        examples=["CartPole-v1"],
    )
    model_dir: str | None = Field(
        None,
        min_length=1,
        max_length=512,
        pattern=r"^[^\x00]+$",
        description="use_case rlhf or reasoning: the model folder (transformers format), "
        "relative to the operator's LM folder, e.g. arithmetic/sft.",
    )
    prompts: str | None = Field(
        None,
        min_length=1,
        max_length=512,
        pattern=r"^[^\x00]+$",
        description="use_case rlhf or reasoning: the JSONL prompt file (with `answer`s), "
        "relative to the operator's LM folder.",
    )
    budget: int = Field(
        gt=0,
        le=10**10,
        description="Training budget: env steps, or responses for rlhf and reasoning.",
    )
    use_case: UseCaseName = Field(
        "auto",
        description="`auto` picks one from the env; rlhf (PPO) and reasoning (GRPO) plan a "
        "language model from `model_dir` and `prompts` instead.",
    )
    overrides: list[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.]*=", max_length=500)]] = (
        Field(
            default_factory=list,
            max_length=50,
            description="`path=value` assignments applied after planning, as `--set`.",
        )
    )


class PlanPublic(BaseModel):
    spec_yaml: str
    markdown: str
    summary: str
    warnings: list[str]


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


class SolveRatePublic(BaseModel):
    solved: int
    runs: int
    rate: float
    ci: list[float] = Field(description="Exact (Clopper-Pearson) 95% interval of the rate.")


class GroupPublic(BaseModel):
    """One group of runs: its scores, and IQM, mean and median with 95% bootstrap intervals."""

    name: str
    n: int = Field(description="Seeds (finished runs) in the group.")
    scores: list[float]
    iqm: float
    iqm_ci: list[float]
    mean: float
    mean_ci: list[float]
    median: float
    median_ci: list[float]
    tasks: list[str]
    solve_rate: SolveRatePublic | None
    warning: str | None = Field(description="Set when the group has fewer than 5 seeds.")


class PairPublic(BaseModel):
    a: str
    b: str
    probability_of_improvement: float = Field(description="P(a > b), ties counted 0.5.")
    ci: list[float] = Field(description="95% bootstrap interval of P(a > b).")
    verdict: Literal["better", "worse", "indistinguishable"]


class ComparisonPublic(BaseModel):
    """Groups of runs compared (docs/guides/comparing-runs.md)."""

    metric: str
    normalized: bool = Field(description="Scores over several envs: 0 = random, 1 = solved.")
    groups: list[GroupPublic]
    pairs: list[PairPublic]
    warnings: list[str]
    skipped: list[str] = Field(description="Runs left out (not finished, no score), and why.")


class CausePublic(BaseModel):
    """One likely root cause (docs/guides/diagnostics.md, "The doctor")."""

    cause: CauseId = Field(description="From the doctor's fixed vocabulary.")
    confidence: float = Field(ge=0, le=1)
    first_step: int | None = Field(description="Env step (LM runs: update) where it began.")
    evidence: list[dict[str, Any]] = Field(
        description="Each: metric, value, and where known threshold, updates, from_step, note."
    )
    patch: dict[str, Any] = Field(description="Dotted spec fields -> values ({}: no spec fix).")
    advice: str


class NotJudgedPublic(BaseModel):
    cause: CauseId
    reason: str


class DiagnosisPublic(BaseModel):
    """The doctor's diagnosis of a run: likely causes, most likely first (empty: healthy)."""

    causes: list[CausePublic]
    not_judged: list[NotJudgedPublic]
    thin_evidence: str | None = Field(
        None, description="Why trends were not judged (too short to tell); null: fully judged."
    )
