"""Causes in exploration and in the problem's shape: entropy and std collapse, no reward
signal, a horizon shorter than the episodes, rollouts too short to learn from."""

from __future__ import annotations

import math

from ppo_platform.doctor.rules_step import Verdict, collapse_step, entropy_patch, significant
from ppo_platform.doctor.series import View, improving, median
from ppo_platform.doctor.vocabulary import (
    CauseId,
    Finding,
    NotJudged,
    RunFacts,
    Scalar,
    evidence,
)
from ppo_platform.health.thresholds import Limits


def solved_from(view: View, facts: RunFacts, step: int, cause: CauseId) -> NotJudged | None:
    """A collapse from `step` on a run whose return there is at the level the env declares
    solved is not judged (None: it is not, or the env declares no level): a policy that solved
    its task is meant to become deterministic, and its return has nowhere left to improve."""
    if facts.solved_return is None:
        return None
    spread = "entropy" if cause == "entropy_collapse" else "action std"
    for signal, what in (("episode_return", "training"), ("eval_return", "evaluation")):
        after = [x for s, x in view.points(signal) if s >= step]
        if after and median(after) >= facts.solved_return:
            return NotJudged(
                cause,
                f"the {spread} collapsed from step {step:,}, but the median {what} return from "
                f"there ({significant(median(after))}) is at the env's solved level "
                f"({facts.solved_return:g}, its registered reward_threshold): a policy that "
                "solved its task is meant to become deterministic, so no collapse is named",
            )
    return None


def entropy_collapse(view: View, facts: RunFacts, limits: Limits) -> Verdict:
    if facts.continuous or view.has("std"):
        return None  # a Gaussian's entropy has no floor at 0: std_collapse judges it
    if not view.has("entropy"):
        return NotJudged("entropy_collapse", "the run logged no entropy")
    start = view.values("entropy")[0]
    if start <= 0:
        return None
    floor = limits.entropy_collapse_share * start
    found = collapse_step(view, "entropy", lambda h: h < floor, limits.entropy_collapse_by, facts)
    if found is None:
        return None
    step, value = found
    solved = solved_from(view, facts, step, "entropy_collapse")
    if solved is not None:
        return solved
    return Finding(
        "entropy_collapse",
        0.7,
        step,
        [
            evidence(
                view.label("entropy"),
                significant(value),
                threshold=significant(floor),
                from_step=step,
                note=f"entropy fell below {limits.entropy_collapse_share:.0%} "
                f"of its first value {start:.3g}, and the return stopped improving",
            )
        ],
        "the policy became deterministic early and stopped exploring: add an entropy bonus",
        entropy_patch(facts),
    )


def std_collapse(view: View, facts: RunFacts, limits: Limits) -> Verdict:
    if facts.continuous is False:
        return None
    if not view.has("std"):
        reason = "the run logged no action std (continuous actions only)"
        return NotJudged("std_collapse", reason) if facts.continuous else None
    found = collapse_step(
        view, "std", lambda s: s < limits.std_min, limits.entropy_collapse_by, facts
    )
    if found is None:
        return None
    step, value = found
    solved = solved_from(view, facts, step, "std_collapse")
    if solved is not None:
        return solved
    return Finding(
        "std_collapse",
        0.7,
        step,
        [
            evidence(
                view.label("std"),
                significant(value),
                threshold=limits.std_min,
                from_step=step,
                note="before half the run, and the return stopped improving",
            )
        ],
        "the Gaussian's std collapsed and exploration stopped: add an entropy bonus",
        entropy_patch(facts),
    )


def no_reward_signal(view: View, facts: RunFacts, limits: Limits) -> Verdict:
    if not view.has("episode_return"):
        return NotJudged("no_reward_signal", "the run logged no episode return")
    returns = view.values("episode_return")
    if len(returns) < limits.min_updates:
        return None
    spread = max(returns) - min(returns)
    if spread > 1e-6 * max(1.0, abs(returns[0])):
        return None
    points = view.points("episode_return")
    return Finding(
        "no_reward_signal",
        0.8,
        points[0][0],
        [
            evidence(
                view.label("episode_return"),
                significant(returns[0]),
                updates=len(returns),
                from_step=points[0][0],
                note="every episode scored the same",
            )
        ],
        f"every episode returned {returns[0]:.4g}: the reward gives PPO nothing to follow. "
        "Shape the env's reward (a signal before the goal), or explore more",
    )


def horizon_too_short(view: View, facts: RunFacts, limits: Limits) -> Verdict:
    if facts.gamma is None or not view.has("episode_length"):
        return NotJudged("horizon_too_short", "needs gamma (the spec) and episode lengths")
    evaluations = view.values("eval_return")  # the greedy policy can stay stuck while the
    learning = improving(view.values("episode_return")) and (  # sampled return creeps up
        len(evaluations) < 2 or improving(evaluations)
    )
    if facts.gamma >= 1 or learning:
        return None
    horizon = 1 / (1 - facts.gamma)
    length = max(view.values("episode_length"))
    low, high = limits.gamma_range
    gamma = round(min(high, max(low, 1 - 1 / max(length, 1.0))), 4)
    if length <= limits.horizon_ratio * horizon or gamma <= facts.gamma:
        return None
    return Finding(
        "horizon_too_short",
        0.65,
        view.points("episode_length")[0][0],
        [
            evidence("advantage.gamma", facts.gamma, note=f"effective horizon {horizon:.3g} steps"),
            evidence(view.label("episode_length"), significant(length), note="longest mean"),
        ],
        f"gamma {facts.gamma} looks {horizon:.3g} steps ahead in episodes of ~{length:.0f}: "
        "the agent cannot see what its actions lead to. Raise gamma to 1 - 1/episode length",
        {"advantage.gamma": gamma},
    )


def rollout_too_short(view: View, facts: RunFacts, limits: Limits) -> Verdict:
    if facts.n_steps is None or facts.n_envs is None:
        return NotJudged("rollout_too_short", "needs rollout.n_steps and env.n_envs (the spec)")
    if improving(view.values("episode_return")):
        return None
    lengths = view.values("episode_length")
    length = max(lengths) if lengths else 0.0
    batch = facts.n_steps * facts.n_envs
    short = facts.n_steps * limits.rollout_ratio < length
    if not (short or batch < limits.min_batch):
        return None
    wanted = max(4 * facts.n_steps, math.ceil(limits.min_batch / facts.n_envs))
    n_steps = min(2048, 2 ** math.ceil(math.log2(wanted)))
    patch: dict[str, Scalar] = {"rollout.n_steps": n_steps}
    return Finding(
        "rollout_too_short",
        0.6,
        None,
        [
            evidence("rollout.n_steps", facts.n_steps, note=f"{batch} transitions per rollout"),
            evidence(view.label("episode_length"), significant(length), note="longest mean"),
        ],
        f"each rollout holds {batch} transitions ({facts.n_envs} envs x {facts.n_steps} steps), "
        "too few to estimate advantages: collect longer rollouts",
        patch,
    )
