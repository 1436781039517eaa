"""The doctor's words: the fixed cause vocabulary, what a finding holds, and the facts of a run.

Every cause, its evidence and its patch is explained in docs/guides/diagnostics.md
("The doctor"). The vocabulary is a contract: scripts and the REST API match on these ids.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, get_args

CauseId = Literal[
    "step_too_large",
    "step_too_small",
    "observations_not_finite",
    "observation_scale",
    "rewards_not_finite",
    "reward_scale",
    "critic_not_learning",
    "entropy_collapse",
    "std_collapse",
    "action_saturation",
    "no_reward_signal",
    "horizon_too_short",
    "rollout_too_short",
    "env_crash",
    "lm_kl_penalty_inert",
    "lm_kl_runaway",
    "lm_reward_hacking",
    "lm_length_collapse",
    "lm_length_at_limit",
    "lm_group_no_signal",
]
CAUSES: tuple[CauseId, ...] = get_args(CauseId)

Scalar = str | int | float | bool | None
Evidence = dict[str, Any]


def evidence(
    metric: str,
    value: float | int | str,
    *,
    threshold: float | None = None,
    updates: int | None = None,
    from_step: int | None = None,
    note: str = "",
) -> Evidence:
    """One piece of evidence: a metric, the value that counts, and where it was seen."""
    item: Evidence = {"metric": metric, "value": value}
    for key, extra in (("threshold", threshold), ("updates", updates), ("from_step", from_step)):
        if extra is not None:
            item[key] = extra
    if note:
        item["note"] = note
    return item


@dataclass(frozen=True)
class Finding:
    """One likely root cause of a run's trouble, with what shows it and what to change."""

    cause: CauseId
    confidence: float  # 0..1: how sure the rule is, from how much of the run shows it
    first_step: int | None  # the env step (or update, for language models) where it began
    evidence: list[Evidence]
    advice: str
    patch: dict[str, Scalar] = field(default_factory=dict)  # dotted spec fields -> new values

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["confidence"] = round(self.confidence, 3)
        return data

    def line(self) -> str:
        """One line for a terminal: the cause, its confidence, where, and what to do."""
        where = f" from step {self.first_step:,}" if self.first_step is not None else ""
        patch = ", ".join(f"{k}={v}" for k, v in self.patch.items())
        fix = f" [patch: {patch}]" if patch else ""
        return f"{self.cause} ({self.confidence:.0%}){where}: {self.advice}{fix}"


@dataclass(frozen=True)
class NotJudged:
    """A cause the doctor could not judge, and why (a metric the run did not log)."""

    cause: CauseId
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"cause": self.cause, "reason": self.reason}


@dataclass(frozen=True)
class Diagnosis:
    """Ranked causes (most likely first; empty for a healthy run) and what was not judged."""

    causes: list[Finding]
    not_judged: list[NotJudged]
    # Why the run was judged on events only (too short to tell a trend); None: fully judged.
    thin_evidence: str | None = None

    @property
    def top(self) -> Finding | None:
        return self.causes[0] if self.causes else None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "causes": [c.to_dict() for c in self.causes],
            "not_judged": [n.to_dict() for n in self.not_judged],
        }
        if self.thin_evidence is not None:
            data["thin_evidence"] = self.thin_evidence
        return data

    def lines(self) -> list[str]:
        if not self.causes and self.thin_evidence is not None:
            return [f"not judged: {self.thin_evidence}"]
        if not self.causes:
            return ["no cause found: the run looks healthy on every signal judged"]
        return [f"{i}. {c.line()}" for i, c in enumerate(self.causes, 1)]


@dataclass(frozen=True)
class Failure:
    """How a run ended when it failed: the error's type and message and where it came from.

    `source` is `env` when the env raised (or handed over non-finite values), `trainer` when
    training itself failed (diverged), `unknown` when the run says only its message.
    """

    message: str
    type: str | None = None
    source: Literal["env", "trainer", "unknown"] = "unknown"
    step: int | None = None
    index: int | None = None  # the observation index at fault, when the env handed one over
    kind: str | None = None  # e.g. non_finite_observation, non_finite_reward, exception


@dataclass(frozen=True)
class RunFacts:
    """What the doctor knows of a run besides its metrics (None: unknown, e.g. a TensorBoard
    log). Patches are computed from these and from the metrics."""

    algorithm: str | None = None
    env_id: str | None = None
    learning_rate: float | None = None
    epochs: int | None = None
    gamma: float | None = None
    n_steps: int | None = None
    n_envs: int | None = None
    clip_epsilon: float | None = None
    value_coef: float | None = None
    entropy_coef: float | None = None
    normalize_obs: bool | None = None
    normalize_reward: bool | None = None
    total_timesteps: int | None = None
    continuous: bool | None = None
    kl_target: float | None = None  # language models: lm.kl.target
    kl_beta: float | None = None  # language models: lm.kl.beta
    max_new_tokens: int | None = None  # language models: lm.generation.max_new_tokens
    # The return the env's registry declares solved (gymnasium's reward_threshold; None: the
    # env declares none, or the doctor does not know the env, e.g. a TensorBoard log).
    solved_return: float | None = None
    failure: Failure | None = None
    source: str = "ppo-platform"  # ppo-platform | stable-baselines3 | cleanrl
