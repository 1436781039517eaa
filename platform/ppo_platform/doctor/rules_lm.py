"""Causes in PPO on a language model: the KL penalty to the reference switched off in effect or
running away, reward up while held-out reward falls, responses collapsing to nothing.
Steps here are updates (the LM runner logs one row per update)."""

from __future__ import annotations

import math

from ppo_platform.doctor.rules_step import Verdict, significant
from ppo_platform.doctor.series import View, improving, median, thirds
from ppo_platform.doctor.vocabulary import Finding, RunFacts, Scalar, evidence
from ppo_platform.health.thresholds import Limits


def lm_kl_penalty_inert(view: View, facts: RunFacts, limits: Limits) -> Verdict:
    if not view.has("lm_kl_beta"):
        return None
    points = view.points("lm_kl_beta")
    floor = [(s, x) for s, x in points if x <= limits.lm_beta_floor]
    share = len(floor) / len(points)
    if share < 0.5 or (facts.kl_beta is not None and facts.kl_beta <= limits.lm_beta_floor):
        return None  # a beta set to ~0 on purpose is no fault
    kl = view.values("lm_kl_ref")
    found = [
        evidence(
            view.label("lm_kl_beta"),
            significant(floor[-1][1]),
            threshold=limits.lm_beta_floor,
            updates=len(floor),
            from_step=floor[0][0],
            note=f"beta at its floor on {share:.0%} of updates: the KL penalty is off",
        )
    ]
    if kl:
        found.append(
            evidence(
                view.label("lm_kl_ref"),
                significant(median(kl)),
                threshold=facts.kl_target,
                note="median measured KL",
            )
        )
    # The policy starts at its reference (KL 0), so an adaptive target halves beta from the
    # first update until the KL reaches half of it: a fixed beta (lm.kl.beta) stays on.
    patch: dict[str, Scalar] = {"lm.kl.target": None} if facts.kl_target is not None else {}
    return Finding(
        "lm_kl_penalty_inert",
        min(0.95, 0.5 + 0.5 * share),
        floor[0][0],
        found,
        "the measured KL stays below the target, so the adaptive rule halves beta every update "
        "until the penalty is gone: keep beta fixed (lm.kl.target: null) at lm.kl.beta",
        patch,
    )


def lm_kl_runaway(view: View, facts: RunFacts, limits: Limits) -> Verdict:
    if not view.has("lm_kl_ref"):
        return None
    points = view.points("lm_kl_ref")
    # beta 0 (no target): nothing holds the policy near its reference, so the KL itself is the
    # bound the plan can state; one nat past it is a drift the run should be told about.
    beta = facts.kl_beta
    unpenalized = facts.kl_target is None and beta is not None and beta <= limits.lm_beta_floor
    # A fixed beta has no target: the policy starts at its reference (KL 0), so the first KL
    # is no yardstick; an absolute level is.
    reference = facts.kl_target or max(points[0][1], limits.lm_kl_reference)
    bound = limits.lm_kl_reference if unpenalized else limits.lm_kl_runaway_factor * reference
    late = points[len(points) * 2 // 3 :]
    high = [(s, x) for s, x in late if x > bound]
    if len(late) < 2 or len(high) < len(late) / 2:
        return None
    kl = median([x for _, x in high])
    patch: dict[str, Scalar] = {}
    if unpenalized:
        # a small fixed penalty, the rlhf plan's beta, puts a bound back
        confidence, note, patch = (
            0.7,
            "late in the run, with lm.kl.beta 0 (no KL penalty)",
            {"lm.kl.beta": 0.05},
        )
        advice = (
            "with beta 0 nothing holds the policy near its reference, and its KL to it drifted "
            f"past {significant(bound)} nat(s): set a small fixed penalty (lm.kl.beta 0.05, the "
            "rlhf plan's) if the reference's behaviour is to be kept"
        )
    else:
        confidence, note = 0.8, "late in the run"
        advice = (
            "the policy runs away from the reference faster than the penalty holds it: lower "
            "the learning rate"
        )
        if facts.learning_rate is not None:
            factor = max(2.0, math.sqrt(kl / reference))
            patch["update.learning_rate.start"] = significant(facts.learning_rate / factor)
    found = evidence(
        view.label("lm_kl_ref"),
        significant(kl),
        threshold=significant(bound),
        updates=len(high),
        from_step=high[0][0],
        note=note,
    )
    return Finding("lm_kl_runaway", confidence, high[0][0], [found], advice, patch)


def lm_reward_hacking(view: View, facts: RunFacts, limits: Limits) -> Verdict:
    reward, held_out = view.values("lm_reward"), view.values("eval_return")
    if len(held_out) < 3 or not improving(reward):
        return None
    first, last = thirds(held_out)
    if first - last <= 0.1 * max(abs(first), max(held_out) - min(held_out), 1e-8):
        return None
    patch: dict[str, Scalar] = {}
    if facts.kl_beta is not None:
        patch["lm.kl.beta"] = significant(min(100.0, max(2 * facts.kl_beta, 0.05)))
    points = view.points("eval_return")
    return Finding(
        "lm_reward_hacking",
        0.75,
        points[len(points) // 3][0],
        [
            evidence(view.label("lm_reward"), "rising", note="training reward"),
            evidence(
                view.label("eval_return"),
                f"{first:.3g} -> {last:.3g}",
                note="held-out reward falls",
            ),
        ],
        "the training reward rises while the held-out reward falls: the policy exploits the "
        "reward terms. Hold it nearer the reference (a larger lm.kl.beta) and check the terms",
        patch,
    )


def lm_length_collapse(view: View, facts: RunFacts, limits: Limits) -> Verdict:
    lengths = view.points("lm_length")
    if len(lengths) < 3:
        return None
    start = lengths[0][1]
    short = [(s, x) for s, x in lengths if x < limits.lm_length_collapse_share * start]
    if not short or lengths[-1][1] >= limits.lm_length_collapse_share * start:
        return None
    return Finding(
        "lm_length_collapse",
        0.7,
        short[0][0],
        [
            evidence(
                view.label("lm_length"),
                significant(lengths[-1][1]),
                threshold=significant(limits.lm_length_collapse_share * start),
                from_step=short[0][0],
                note=f"first update: {start:.3g} tokens",
            )
        ],
        "responses shrank to a fraction of their first length: a reward term or the per-token "
        "KL penalty pays for ending early. Check the reward terms' length terms",
    )


LENGTH_LIMIT_SHARE = 0.95  # mean response length at or above this share of max_new_tokens
GROUP_ALIKE_SHARE = 0.8  # groups whose responses all score alike, on most updates


def lm_length_at_limit(view: View, facts: RunFacts, limits: Limits) -> Verdict:
    """Responses drift to max_new_tokens: they stop ending (EOS) and are cut at the limit."""
    lengths = view.points("lm_length")
    if len(lengths) < 3 or not facts.max_new_tokens:
        return None
    bound = LENGTH_LIMIT_SHARE * facts.max_new_tokens
    late = lengths[len(lengths) * 2 // 3 :]
    if lengths[0][1] >= bound or not all(x >= bound for _, x in late):
        return None  # started there (the limit was always too short) or did not stay there
    first = next(s for s, x in lengths if x >= bound)
    return Finding(
        "lm_length_at_limit",
        0.7,
        first,
        [
            evidence(
                view.label("lm_length"),
                significant(late[-1][1]),
                threshold=significant(bound),
                from_step=first,
                note=f"max_new_tokens {facts.max_new_tokens}; first update: {lengths[0][1]:.3g}",
            )
        ],
        "responses grew until the length limit cuts them: a reward term pays for length, or "
        "the EOS token lost its probability. Check the reward terms (add length_penalty)",
    )


def lm_group_no_signal(view: View, facts: RunFacts, limits: Limits) -> Verdict:
    """Every response to a prompt scores alike: the group advantage is 0 and nothing trains."""
    points = view.points("lm_group_zero_spread")
    if len(points) < 3:
        return None
    alike = [(s, x) for s, x in points if x >= GROUP_ALIKE_SHARE]
    if len(alike) < len(points) / 2:
        return None
    return Finding(
        "lm_group_no_signal",
        0.8,
        alike[0][0],
        [
            evidence(
                view.label("lm_group_zero_spread"),
                significant(median([x for _, x in alike])),
                threshold=GROUP_ALIKE_SHARE,
                updates=len(alike),
                from_step=alike[0][0],
                note="share of groups whose responses all score alike (advantage 0)",
            )
        ],
        "within most groups every response gets the same score, so the group advantage is 0 "
        "and the update has no signal: raise the sampling temperature or advantage.group_size, "
        "or use a reward with partial credit (the tasks are too hard or too easy)",
        {"advantage.group_size": 16} if facts.algorithm == "ppo_lm" else {},
    )
