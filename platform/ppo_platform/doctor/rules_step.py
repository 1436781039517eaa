"""Causes in the optimisation: the step size, the critic, exploration, the horizon, the batch.

Each rule reads a run's signals (`View`) and facts, and returns a `Finding`, `NotJudged` (a
signal it needs is missing) or None (judged healthy). Thresholds: `thresholds.Limits`.
"""

from __future__ import annotations

import math

from ppo_platform.doctor.series import (
    Points,
    View,
    first_step_where,
    improving,
    median,
    sustained,
    sustained_above,
    thirds,
)
from ppo_platform.doctor.vocabulary import Finding, NotJudged, RunFacts, Scalar, evidence
from ppo_platform.health.thresholds import Limits

Verdict = Finding | NotJudged | None


def significant(value: float, digits: int = 3) -> float:
    """`value` rounded to `digits` significant digits (patched values read like a human's)."""
    if value == 0 or not math.isfinite(value):
        return value
    return round(value, digits - 1 - math.floor(math.log10(abs(value))))


def _judged_steps(view: View, limits: Limits) -> Points:
    """KL points of updates whose LR was not annealed below `annealed_fraction` of its peak."""
    kl = view.points("kl")
    lr = dict(view.points("learning_rate"))
    if not lr:
        return kl
    peak = max(lr.values())
    return [(s, x) for s, x in kl if lr.get(s, peak) >= limits.annealed_fraction * peak]


def step_too_large(view: View, facts: RunFacts, limits: Limits) -> Verdict:
    if not view.has("kl"):
        return NotJudged("step_too_large", "the run logged no approx KL")
    points = view.points("kl")
    high = sustained_above(view, "kl", limits.kl_alert, limits.large_share, at_least=3)
    if high is None:
        return one_step_too_large(view, facts, limits)
    share = len(high) / len(points)
    ordered = sorted(x for _, x in points)
    upper = ordered[(3 * len(ordered)) // 4]
    factor = min(limits.max_lr_factor, max(2.0, math.sqrt(upper / limits.kl_aim)))
    found = [
        evidence(
            view.label("kl"),
            significant(upper),
            threshold=limits.kl_alert,
            updates=len(high),
            from_step=high[0][0],
            note=f"upper-quartile KL; above the alert on {share:.0%} of updates",
        )
    ]
    clip = view.values("clip_fraction")
    if clip:
        found.append(
            evidence(view.label("clip_fraction"), significant(median(clip)), note="median")
        )
    patch: dict[str, Scalar] = {}
    if facts.learning_rate is not None:
        patch["update.learning_rate.start"] = significant(facts.learning_rate / factor)
    if facts.epochs is not None and facts.epochs > 10:
        patch["update.epochs"] = 10
    return Finding(
        "step_too_large",
        min(0.95, 0.5 + 0.5 * share),
        high[0][0],
        found,
        f"each update moves the policy too far (KL ~{upper:.3g}, healthy 0-"
        f"{limits.kl_healthy_max}): divide the learning rate by ~{factor:.3g}"
        + (" and lower K" if "update.epochs" in patch else ""),
        patch,
    )


def one_step_too_large(view: View, facts: RunFacts, limits: Limits) -> Verdict:
    """An event, not a trend: one update whose KL or clip fraction is far past its alarm
    (`kl_event_factor`, `clip_fraction_event`), after which the policy's spread (entropy, or a
    Gaussian's std) collapses and stays collapsed. One such update never sustains, so the
    trend rule above cannot see it."""
    kl, clip = dict(view.points("kl")), dict(view.points("clip_fraction"))
    far = limits.kl_event_factor * limits.kl_alert
    events = [
        s for s in sorted(kl) if kl[s] >= far or clip.get(s, 0.0) >= limits.clip_fraction_event
    ]
    # A Gaussian's entropy has no floor at 0: its std says whether it collapsed.
    spread = "std" if facts.continuous or view.has("std") else "entropy"
    points = view.points(spread)
    if not events or len(points) < 2:
        return None
    step = events[0]
    before = [x for s, x in points if s < step] or [points[0][1]]
    after = [x for s, x in points if s > step]
    floor = limits.entropy_collapse_share * before[0] if spread == "entropy" else limits.std_min
    if not after or median(after) >= floor or before[0] <= floor:
        return None
    factor = min(limits.max_lr_factor, max(2.0, math.sqrt(kl[step] / limits.kl_aim)))
    found = [
        evidence(
            view.label("kl"),
            significant(kl[step]),
            threshold=far,
            updates=1,
            from_step=step,
            note=f"one update at {kl[step] / limits.kl_alert:.3g}x the KL alert",
        ),
        evidence(
            view.label(spread),
            significant(median(after)),
            threshold=significant(floor),
            from_step=step,
            note=f"median {spread} after that update (before it: {significant(before[0])})",
        ),
    ]
    if step in clip:
        found.insert(1, evidence(view.label("clip_fraction"), significant(clip[step])))
    patch: dict[str, Scalar] = {}
    if facts.learning_rate is not None:
        patch["update.learning_rate.start"] = significant(facts.learning_rate / factor)
    return Finding(
        "step_too_large",
        0.9,
        step,
        found,
        f"one update moved the policy so far (KL {kl[step]:.3g}, healthy 0-"
        f"{limits.kl_healthy_max}) that its {spread} collapsed and it stopped learning: divide "
        f"the learning rate by ~{factor:.3g}",
        patch,
    )


def diverged(view: View, facts: RunFacts, limits: Limits) -> Verdict:
    """An event: training itself turned NaN (the env's inputs were finite: those are
    `observations_not_finite` and `rewards_not_finite`). A learning rate so large that one
    update blows the Gaussian's parameters up ends here, often before a trend can show."""
    failure = facts.failure
    if failure is None or failure.source != "trainer" or failure.kind != "non_finite_update":
        return None
    # Inputs far out of scale blow the step up too: then the scale is the cause, not the LR.
    rewards, observations = view.values("reward_abs_max"), view.values("obs_abs_max")
    if (rewards and max(rewards) > limits.reward_per_step_max) or (
        observations and max(observations) > limits.observation_abs_max
    ):
        return None
    patch: dict[str, Scalar] = {}
    if facts.learning_rate is not None:
        patch["update.learning_rate.start"] = significant(
            facts.learning_rate / limits.diverged_lr_factor
        )
    return Finding(
        "step_too_large",
        0.8,
        failure.step,
        [evidence("failure/non_finite_update", failure.message, from_step=failure.step)],
        f"training turned NaN at env step {failure.step} on finite observations and rewards: "
        f"an update moved the weights too far. Divide the learning rate by "
        f"~{limits.diverged_lr_factor:g}",
        patch,
    )


def step_too_small(view: View, facts: RunFacts, limits: Limits) -> Verdict:
    if not view.has("kl"):
        return NotJudged("step_too_small", "the run logged no approx KL")
    judged = _judged_steps(view, limits)
    if len(judged) < limits.min_updates:
        return None
    clip = dict(view.points("clip_fraction"))
    tiny = sustained(
        judged,
        lambda s, x: x < limits.kl_tiny and clip.get(s, 0.0) < limits.clip_fraction_low,
        limits.small_share,
    )
    if tiny is None or improving(view.values("episode_return")):
        return None
    share = len(tiny) / len(judged)
    kl = max(median([x for _, x in judged]), 1e-12)
    factor = min(limits.max_lr_factor, max(2.0, math.sqrt(limits.kl_aim / kl)))
    patch: dict[str, Scalar] = {}
    if facts.learning_rate is not None:
        patch["update.learning_rate.start"] = significant(
            min(max(facts.learning_rate, limits.lr_max), facts.learning_rate * factor)
        )
    found = [
        evidence(
            view.label("kl"),
            significant(kl),
            threshold=limits.kl_tiny,
            updates=len(tiny),
            from_step=tiny[0][0],
            note=f"median KL; tiny on {share:.0%} of the updates judged",
        )
    ]
    if clip:
        found.append(
            evidence(view.label("clip_fraction"), significant(median(list(clip.values()))))
        )
    if view.has("episode_return"):
        found.append(evidence(view.label("episode_return"), "no progress"))
    return Finding(
        "step_too_small",
        min(0.9, 0.4 + 0.5 * share),
        tiny[0][0],
        found,
        f"the policy barely moves (KL ~{kl:.2g}, clipping never triggers) and the return does "
        f"not rise: multiply the learning rate by ~{factor:.3g}",
        patch,
    )


def critic_still_fitting(view: View, limits: Limits, late: Points) -> bool:
    """Whether the critic is still fitting the level of its targets: its value loss (over the
    returns' second moment RMS^2, where logged) fell to `critic_progress` of its first third by
    the last, and late it is still above the returns' variance. Explained variance ignores the
    level, so it stays near 0 until the level is fitted: slow, not broken (an untrained
    Pendulum critic chasing returns of ~-100)."""
    loss, rms = dict(view.points("value_loss")), dict(view.points("returns_rms"))
    relative = (
        [x / rms[s] ** 2 for s, x in loss.items() if rms.get(s, 0.0) > 0]
        if rms
        else list(loss.values())
    )
    if len(relative) < 3:
        return False
    first, last = thirds(relative)
    if not (first > 0 and last <= limits.critic_progress * first):
        return False
    std = dict(view.points("returns_std"))
    excess = [loss[s] / std[s] ** 2 for s, _ in late if s in loss and std.get(s, 0.0) > 0]
    return not excess or median(excess) > 1.0


def critic_not_learning(view: View, facts: RunFacts, limits: Limits) -> Verdict:
    if not view.has("explained_variance"):
        return NotJudged("critic_not_learning", "the run logged no explained variance")
    ev = view.points("explained_variance")
    end = facts.total_timesteps or ev[-1][0]
    std, rms = dict(view.points("returns_std")), dict(view.points("returns_rms"))

    def informative(step: int) -> bool:
        if step not in std or step not in rms:
            return True
        return std[step] > 0 and std[step] ** 2 >= limits.return_variance_floor * rms[step] ** 2

    late = [(s, x) for s, x in ev if s >= limits.late_fraction * end and informative(s)]
    if len(late) < limits.critic_min_updates:
        return NotJudged(
            "critic_not_learning",
            f"{len(late)} updates in the run's late half; explained variance is judged on "
            f"{limits.critic_min_updates} at least (the critic had no chance yet)",
        )
    bad = [(s, x) for s, x in late if x <= limits.explained_variance_min]
    share = len(bad) / len(late)
    if share < limits.critic_share or critic_still_fitting(view, limits, late):
        return None
    patch: dict[str, Scalar] = {}
    if facts.value_coef is not None:
        patch["surrogate.value_coef"] = (
            0.5 if facts.value_coef == 0 else min(1.0, 2 * facts.value_coef)
        )
    return Finding(
        "critic_not_learning",
        min(0.85, 0.4 + 0.4 * share),
        bad[0][0],
        [
            evidence(
                view.label("explained_variance"),
                significant(median([x for _, x in bad])),
                threshold=limits.explained_variance_min,
                updates=len(bad),
                from_step=bad[0][0],
                note=f"median late in training; at or below the threshold on {share:.0%}; "
                "the value loss is not falling",
            )
        ],
        "the value function explains none of the returns late in training and its loss does "
        "not fall: weigh the value loss more (surrogate.value_coef) and check the reward scale",
        patch,
    )


def entropy_patch(facts: RunFacts) -> dict[str, Scalar]:
    if facts.entropy_coef is None:
        return {}
    return {
        "surrogate.entropy_coef": 0.01
        if facts.entropy_coef == 0
        else min(0.1, 3 * facts.entropy_coef)
    }


def collapse_step(
    view: View, signal: str, holds: object, by: float, facts: RunFacts
) -> tuple[int, float] | None:
    """(step, value) where `signal` first met `holds`, if before `by` of the run and the
    return did not improve from there on."""
    points = view.points(signal)
    step = first_step_where(points, holds)
    end = facts.total_timesteps or (points[-1][0] if points else 0)
    if step is None or step > by * end:
        return None
    after = [x for s, x in view.points("episode_return") if s >= step]
    if improving(after):
        return None
    return step, dict(points)[step]
