"""Refusal rules of the skill-ppo-trainer template: settings that are well-formed but unsafe.

Every entry point (validate, run, sweep, tune, plan, the API) goes through `refusals()`, so the
rules live in exactly one place. 30 epochs and epsilon 0.3 are allowed; one more is not.
"""

from __future__ import annotations

from .errors import SpecIssue
from .spec import ExperimentSpec

MAX_EPOCHS = 30
MAX_CLIP_EPSILON = 0.3
PPO_ALGORITHMS = frozenset({"ppo", "ppo_kl"})


def epochs_issue(epochs: float, path: str = "update.epochs") -> SpecIssue | None:
    """K above 30 reuses one rollout so often that the policy leaves the trust region."""
    if epochs <= MAX_EPOCHS:
        return None
    return SpecIssue(
        path=path,
        value=epochs,
        message=f"refused: K = {epochs} epochs is above the limit of {MAX_EPOCHS} "
        "(unsafe trust region: the policy drifts too far from the one that collected the data).",
        fix=f"use at most {MAX_EPOCHS} epochs; 3-10 is typical, 20 for small classic-control nets.",
    )


def clip_epsilon_issue(epsilon: float, path: str = "surrogate.clip_epsilon") -> SpecIssue | None:
    """Epsilon above 0.3 lets a single update move action probabilities too far."""
    if epsilon <= MAX_CLIP_EPSILON:
        return None
    return SpecIssue(
        path=path,
        value=epsilon,
        message=f"refused: clip epsilon {epsilon} is above the limit of {MAX_CLIP_EPSILON} "
        "(unsafe trust region).",
        fix=f"use a clip epsilon of at most {MAX_CLIP_EPSILON}; 0.2 is the standard value.",
    )


def refuse_unsafe_trust_region(spec: ExperimentSpec) -> list[SpecIssue]:
    issues = [epochs_issue(spec.update.epochs)]
    if spec.algorithm in PPO_ALGORITHMS:
        clip = spec.surrogate.clip_epsilon
        issues.append(clip_epsilon_issue(clip.start, "surrogate.clip_epsilon.start"))
        if clip.schedule == "linear":  # a schedule may rise: its end must be safe too
            issues.append(clip_epsilon_issue(clip.end, "surrogate.clip_epsilon.end"))
    return [issue for issue in issues if issue is not None]


def refuse_unnormalized_advantages(spec: ExperimentSpec) -> list[SpecIssue]:
    if spec.algorithm not in PPO_ALGORITHMS or spec.surrogate.normalize_advantage:
        return []
    return [
        SpecIssue(
            path="surrogate.normalize_advantage",
            value=False,
            message="refused: PPO without advantage normalization (it breaks PPO on most "
            "benchmarks: the learning rate cannot suit every batch's advantage scale).",
            fix="set surrogate.normalize_advantage: true.",
        )
    ]


def refuse_unmonitored_run(spec: ExperimentSpec) -> list[SpecIssue]:
    if spec.algorithm not in PPO_ALGORITHMS:
        return []
    issues = []
    for field, label in (("monitor_kl", "approx KL"), ("monitor_clip_fraction", "clip fraction")):
        if not getattr(spec.diagnostics, field):
            issues.append(
                SpecIssue(
                    path=f"diagnostics.{field}",
                    value=False,
                    message=f"refused: PPO without {label} monitoring (the only early warning "
                    "that the update left the trust region).",
                    fix=f"set diagnostics.{field}: true (use on_alert: warn to only log alerts).",
                )
            )
    return issues


def inconsistencies(spec: ExperimentSpec) -> list[SpecIssue]:
    """Fields that are valid alone but contradict each other."""
    issues = []
    if spec.batch_size < 2:
        issues.append(
            SpecIssue(
                path="rollout.n_steps",
                value=spec.rollout.n_steps,
                message="the rollout batch env.n_envs x rollout.n_steps must be at least 2.",
                fix="raise rollout.n_steps or env.n_envs.",
            )
        )
    if spec.update.minibatch_size > spec.batch_size:
        issues.append(
            SpecIssue(
                path="update.minibatch_size",
                value=spec.update.minibatch_size,
                message=f"larger than the rollout batch env.n_envs x rollout.n_steps = "
                f"{spec.env.n_envs} x {spec.rollout.n_steps} = {spec.batch_size}.",
                fix=f"use a minibatch_size of at most {spec.batch_size}, ideally a divisor of it.",
            )
        )
    return issues


def refusals(spec: ExperimentSpec) -> list[SpecIssue]:
    """Every refusal rule that the spec breaks, in a stable order."""
    return [
        *refuse_unsafe_trust_region(spec),
        *refuse_unnormalized_advantages(spec),
        *refuse_unmonitored_run(spec),
    ]
