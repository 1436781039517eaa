"""Causes in the environment: non-finite or badly scaled observations and rewards, actions
outside their bounds, an env that raised. The first and the last no spec can fix: they say
what in the env to look at."""

from __future__ import annotations

from ppo_platform.doctor.rules_step import Verdict, significant
from ppo_platform.doctor.series import View, median, sustained_above
from ppo_platform.doctor.vocabulary import CauseId, Finding, NotJudged, RunFacts, evidence
from ppo_platform.health.thresholds import Limits

ROLLOUT_STATS = "the run logged no per-rollout statistics of {what} (rollout/{metric})"


def observations_not_finite(view: View, facts: RunFacts, limits: Limits) -> Verdict:
    return _env_values(view, facts, "observations", "obs_nonfinite", "observation")


def rewards_not_finite(view: View, facts: RunFacts, limits: Limits) -> Verdict:
    return _env_values(view, facts, "rewards", "reward_nonfinite", "reward")


def _env_values(view: View, facts: RunFacts, what: str, signal: str, noun: str) -> Verdict:
    cause: CauseId = "observations_not_finite" if noun == "observation" else "rewards_not_finite"
    failure = facts.failure
    kind = f"non_finite_{noun}"
    if failure is not None and failure.kind == kind:
        where = f"{noun} index {failure.index}" if failure.index is not None else f"a {noun}"
        return Finding(
            cause,
            0.95,
            failure.step,
            [evidence(f"failure/{kind}", failure.message, from_step=failure.step)],
            f"the env returned a NaN or infinite {where} at env step {failure.step}: look at "
            f"how the env computes its {noun}s there (a division by zero, a log of 0, an "
            "overflow). No learning rate fixes this",
        )
    if not view.has(signal):
        return NotJudged(cause, ROLLOUT_STATS.format(what=what, metric=signal))
    bad = [(s, x) for s, x in view.points(signal) if x > 0]
    if not bad:
        return None
    return Finding(
        cause,
        0.9,
        bad[0][0],
        [evidence(view.label(signal), int(bad[0][1]), updates=len(bad), from_step=bad[0][0])],
        f"the env returned NaN or infinite {what}: look at how it computes them. No learning "
        "rate fixes this",
    )


def observation_scale(view: View, facts: RunFacts, limits: Limits) -> Verdict:
    if facts.normalize_obs:
        return None
    if not view.has("obs_abs_max"):
        return NotJudged(
            "observation_scale", ROLLOUT_STATS.format(what="observations", metric="obs_abs_max")
        )
    large = sustained_above(view, "obs_abs_max", limits.observation_abs_max)
    if large is None:
        return None
    return Finding(
        "observation_scale",
        0.8,
        large[0][0],
        [
            evidence(
                view.label("obs_abs_max"),
                significant(median([x for _, x in large])),
                threshold=limits.observation_abs_max,
                updates=len(large),
                from_step=large[0][0],
                note="largest |observation| per rollout (median)",
            )
        ],
        "observations reach magnitudes the network cannot use as inputs: normalize them",
        {"env.normalize.obs": True},
    )


def reward_scale(view: View, facts: RunFacts, limits: Limits) -> Verdict:
    if facts.normalize_reward:
        return None
    found = []
    ret, length = view.values("episode_return"), view.values("episode_length")
    if ret and length and len(ret) == len(length):
        per_step = median([abs(r) / max(n, 1.0) for r, n in zip(ret, length, strict=True)])
        if per_step > limits.reward_per_step_max:
            found.append(
                evidence(
                    "episode_return / episode_length",
                    significant(per_step),
                    threshold=limits.reward_per_step_max,
                    note="median |reward| per step",
                )
            )
    rms = view.values("returns_rms")
    if rms and median(rms) > limits.returns_rms_max:
        found.append(
            evidence(
                view.label("returns_rms"),
                significant(median(rms)),
                threshold=limits.returns_rms_max,
                note="median RMS of GAE targets",
            )
        )
    if not (ret and length) and not rms:
        return NotJudged(
            "reward_scale",
            "the run logged neither episode returns and lengths nor the returns' RMS",
        )
    if not found:
        return None
    value_loss = view.values("value_loss")
    if value_loss:
        found.append(
            evidence(view.label("value_loss"), significant(median(value_loss)), note="median")
        )
    first = view.points("episode_return") or view.points("returns_rms")
    return Finding(
        "reward_scale",
        0.85,
        first[0][0] if first else None,
        found,
        "rewards are so large that the value loss swamps the policy's gradient (and the "
        "gradient clip): normalize them",
        {"env.normalize.reward": True},
    )


def action_saturation(view: View, facts: RunFacts, limits: Limits) -> Verdict:
    if facts.continuous is False:
        return None
    if not view.has("action_clip_fraction"):
        reason = ROLLOUT_STATS.format(what="actions", metric="action_clip_fraction")
        return NotJudged("action_saturation", reason) if facts.continuous else None
    points = view.points("action_clip_fraction")
    since = limits.late_fraction * (facts.total_timesteps or points[-1][0])
    high = sustained_above(view, "action_clip_fraction", limits.action_clip_max, since=since)
    if high is None:  # judged late: an untrained Gaussian's std spills over a narrow range
        return None
    k = max(1, len(points) // 10)
    untrained = sum(x for _, x in points[:k]) / k  # what the untrained policy clipped
    late = median([x for s, x in points if s >= since])
    if late < untrained + limits.action_clip_rise and late < limits.action_clip_total:
        return None
    return Finding(
        "action_saturation",
        0.7,
        high[0][0],
        [
            evidence(
                view.label("action_clip_fraction"),
                significant(late),
                threshold=limits.action_clip_max,
                updates=len(high),
                from_step=high[0][0],
                note=f"median over the late half; the first rollouts clipped {untrained:.2g}",
            )
        ],
        "most sampled actions fall outside the action bounds and are clipped: the policy's "
        "mean or std has left the action range. Rescale the env's actions to [-1, 1] "
        "(env.wrappers: rescale_action) or start from a smaller std (policy.log_std_init)",
    )


def env_crash(view: View, facts: RunFacts, limits: Limits) -> Verdict:
    failure = facts.failure
    if failure is None or failure.source != "env" or failure.kind not in (None, "env_crash"):
        return None
    kind = failure.type or "an exception"
    where = f" at env step {failure.step}" if failure.step is not None else ""
    return Finding(
        "env_crash",
        0.95,
        failure.step,
        [evidence("failure", f"{kind}: {failure.message}", from_step=failure.step)],
        f"the env raised {kind}{where}: {failure.message}. Look at the env's step() and "
        "reset() there; no spec change fixes it",
    )
