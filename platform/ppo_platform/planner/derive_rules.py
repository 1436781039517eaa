"""One derivation rule per planned spec field: `derive_x(basis) -> Choice`, a value and its reason.

Pure functions of the sized rollout (`sizing.Basis`); `derive.RULES` lists them in the order the
plan shows them. Scale the LR with the minibatch; set gamma from the episode horizon and lambda
from the rollout length. Never epsilon > 0.3 (`rules.MAX_CLIP_EPSILON`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ppo_platform.planner.env_info import EnvInfo
from ppo_platform.planner.render import num
from ppo_platform.planner.reward_probe import (
    PENALTY_GAMMA,
    penalty_gamma_reason,
    penalty_reward_reason,
)
from ppo_platform.planner.sizing import CLASSIC_MINIBATCH, GRADIENT_STEPS_PER_ROLLOUT, Basis, fmt
from ppo_platform.planner.use_cases import ATARI, CLASSIC, RLHF, UseCase
from ppo_platform.spec.rules import MAX_CLIP_EPSILON, MAX_EPOCHS

# Control's LR at SB3's default minibatch; the rules below are in docs/guides/planning.md.
BASE_LR, BASE_MINIBATCH = 3e-4, 64


@dataclass(frozen=True)
class Choice:
    """One planned value: the spec field it sets, the value, and why (for a person)."""

    path: str
    value: Any
    reason: str


def _plural(count: int) -> str:
    return "es" if count > 1 else ""


# --- the rollout and the update ---------------------------------------------------------------


def derive_n_envs(b: Basis) -> Choice:
    if b.case is RLHF:
        reason = (
            "sized for the stand-in env as in a classic-control plan; in the language-model "
            "trainer read N as prompts per rollout batch (typically 64-512)"
        )
    else:
        reason = b.case.n_envs_reason or b.case.source
        if b.n_envs > 1:
            reason += "; parallel envs decorrelate the samples of one rollout"
    return Choice("env.n_envs", b.n_envs, reason)


def derive_n_steps(b: Basis) -> Choice:
    horizon = b.info.horizon
    horizon_note = (
        f"against the {horizon}-step episode limit one rollout holds "
        f"{b.batch} / {horizon} = {b.batch / horizon:.2f} full-length episodes of steps"
        if horizon
        else "the episode horizon is unknown"
    )
    reason = (
        ("stand-in sizing: " if b.case is RLHF else "")
        + "; ".join(b.rollout_notes)
        + f"; {horizon_note}; that gives about {b.updates} updates"
    )
    if horizon and b.batch < horizon:
        reason += (
            ". Rollouts that stop mid-episode are fine: GAE bootstraps from the value at the cut"
        )
    return Choice("rollout.n_steps", b.steps, reason)


def derive_epochs(b: Basis) -> Choice:
    epochs, minibatches, case = b.epochs, b.minibatches, b.case
    steps = epochs * minibatches
    if case is CLASSIC:
        reason = (
            f"about {GRADIENT_STEPS_PER_ROLLOUT} gradient steps per "
            f"rollout ({epochs} x {minibatches} minibatch{_plural(minibatches)} "
            f"= {steps}); small classic-control nets reuse a small batch safely, bigger batches "
            "need fewer passes. Kept in 4-20: K > 20 lets the policy drift from pi_old "
            f"(docs/guides/planning.md), and the skill refuses K > {MAX_EPOCHS}"
        )
    elif case is RLHF:
        reason = (
            "RLHF uses 1-4 epochs (docs/guides/planning.md); a pretrained language model moves "
            "far per pass, and each batch of generations is expensive, so 4 is the upper end"
        )
    elif case is ATARI:
        reason = (
            f"4 passes x {minibatches} minibatches = {steps} steps per rollout, "
            "the PPO paper's Atari setting (3-10 is the usual range: docs/guides/planning.md)"
        )
    else:
        reason = (
            f"the usual 10 passes; with {minibatches} minibatches that is "
            f"{steps} small gradient steps per rollout (3-10 is the usual range: "
            f"docs/guides/planning.md; "
            f"refused above {MAX_EPOCHS})"
        )
    return Choice("update.epochs", epochs, reason)


def _minibatch_note(case: UseCase, batch: int, minibatch: int) -> str:
    if case is CLASSIC or case is RLHF:
        return (
            " (the whole rollout at once: a small batch is already noisy)"
            if minibatch == batch
            else f" (at most {CLASSIC_MINIBATCH} per step, rl-zoo's classic-control size)"
        )
    if case is ATARI:
        return " (4 minibatches per epoch, the PPO paper's Atari setting)"
    return (
        " (at least 64 transitions each and at most 32 per epoch: Gaussian policies learn "
        "best from many small steps)"
    )


def derive_minibatch_size(b: Basis) -> Choice:
    reason = (
        f"divides the batch of {b.batch} into {b.minibatches} equal "
        f"minibatch{_plural(b.minibatches)}" + _minibatch_note(b.case, b.batch, b.minibatch)
    )
    return Choice("update.minibatch_size", b.minibatch, reason)


def _lr_reason(lr: float, minibatch: int, case: UseCase) -> str:
    decay = (
        "PPO benefits from decaying the LR linearly to zero (docs/guides/planning.md)"
        if case.lr_schedule == "linear"
        else "kept constant over the run"
    )
    if case is RLHF:
        return (
            f"{decay}; RLHF fine-tunes an already good model, so its LR is two to three "
            "orders of magnitude below control's (1e-6 to 1e-5: docs/guides/planning.md)"
        )
    if case is ATARI:
        return f"{decay}; the standard Adam LR for the Nature CNN"
    base = f"{decay}. The PPO lessons' control LR is 3e-4 at SB3's minibatch of {BASE_MINIBATCH}"
    if minibatch == BASE_MINIBATCH:
        return f"{base}, the minibatch planned here"
    return (
        f"{base}; a minibatch of {minibatch} averages {minibatch / BASE_MINIBATCH:g}x as many "
        f"samples, so the LR scales with it (linear scaling rule), capped at {num(case.lr_cap)}"
    )


def derive_learning_rate(b: Basis) -> Choice:
    case = b.case
    if case.lr_start is not None:
        value = {"start": case.lr_start, "schedule": case.lr_schedule}
        reason = case.lr_reason or (
            "PPO benefits from decaying the LR linearly to zero (docs/guides/planning.md). A "
            "Gaussian policy "
            f"with gSDE starts at {num(case.lr_start)} whatever the minibatch: its exploration "
            "noise is learned too (the log std), and at 3e-4 a budget of ~100 updates ends "
            "before the noise has shrunk (rl-baselines3-zoo's tuned gSDE Pendulum uses 1e-3)"
        )
        return Choice("update.learning_rate", value, reason)
    lr = (
        case.lr_cap
        if case in (ATARI, RLHF)
        else min(case.lr_cap, BASE_LR * b.minibatch / BASE_MINIBATCH)
    )
    lr = float(f"{lr:.2g}")
    value = {"start": lr, "schedule": case.lr_schedule}
    return Choice("update.learning_rate", value, _lr_reason(lr, b.minibatch, case))


def derive_max_grad_norm(b: Basis) -> Choice:
    return Choice(
        "update.max_grad_norm",
        0.5,
        "RL gradients occasionally explode; clipping the "
        "global norm is a must-have detail (docs/guides/planning.md)",
    )


# --- the surrogate ----------------------------------------------------------------------------


def derive_clip_epsilon(b: Basis) -> Choice:
    case = b.case
    clip = min(case.clip_epsilon, MAX_CLIP_EPSILON)
    limit = f"the skill refuses epsilon > {MAX_CLIP_EPSILON}"
    if case.clip_schedule == "linear":
        reason = (
            "the trust region narrows in step with the LR as the policy converges "
            f"({'the PPO paper Atari value' if case is ATARI else 'rl-zoo'}); {limit}"
        )
    else:
        reason = f"the usual clip range; {limit}"
    return Choice("surrogate.clip_epsilon", {"start": clip, "schedule": case.clip_schedule}, reason)


def derive_value_coef(b: Basis) -> Choice:
    return Choice(
        "surrogate.value_coef",
        b.case.value_coef,
        "the usual weight of "
        "the value loss (separate actor and critic networks, so it only scales the critic)",
    )


def derive_entropy_coef(b: Basis) -> Choice:
    if b.case is ATARI:
        reason = "the usual entropy bonus keeps the categorical policy exploring"
    elif b.case is RLHF:
        reason = (
            "RLHF sets no entropy bonus (docs/guides/planning.md); the KL penalty to the reference "
            "model already keeps the policy from collapsing"
        )
    else:
        reason = (
            "on dense-reward control tasks the stochastic policy explores on its own, and a "
            "bonus would hold back the decisive policy a high score needs (rl-zoo uses 0). Raise "
            "it to 0.01 if the policy's entropy collapses early and returns stall"
        )
    return Choice("surrogate.entropy_coef", b.case.entropy_coef, reason)


def derive_normalize_advantage(b: Basis) -> Choice:
    return Choice(
        "surrogate.normalize_advantage",
        True,
        "always on: without it the advantage scale "
        "changes from batch to batch and no single LR fits; skipping it breaks PPO on most "
        "benchmarks (seeds 000 and 002). The planner refuses to turn it off",
    )


# --- the advantage ----------------------------------------------------------------------------


def _gamma(info: EnvInfo, case: UseCase) -> float:
    if case.gamma is not None:
        return case.gamma
    if info.step_penalty is not None:
        return PENALTY_GAMMA
    if info.horizon is None:
        return 0.99
    return min(0.99, max(0.9, round(1 - 10 / info.horizon, 2)))


def derive_gamma(b: Basis) -> Choice:
    info, case = b.info, b.case
    gamma = _gamma(info, case)
    if case.gamma is not None and case is RLHF:
        reason = (
            "the reward model scores the whole response at its "
            "end, so no token's credit should be discounted (docs/guides/planning.md)"
        )
    elif case.gamma is not None:
        reason = "the usual value for long episodes"
    elif info.step_penalty is not None:
        reason = penalty_gamma_reason(info.step_penalty)
    elif info.horizon is None:
        reason = "the usual default, since the episode horizon is unknown"
    else:
        reason = (
            f"the discount horizon 1/(1-gamma) = {1 / (1 - gamma):.0f} steps "
            f"is about a tenth of the {info.horizon}-step episode ({info.horizon_source}), "
            "long enough to see an action's consequences, short enough to keep value "
            "targets low-variance (clamped to 0.9-0.99)"
        )
    return Choice("advantage.gamma", gamma, reason)


def derive_gae_lambda(b: Basis) -> Choice:
    if b.case.gae_lambda is not None:
        reason = "the usual GAE(0.95) bias/variance trade-off"
        return Choice("advantage.gae_lambda", b.case.gae_lambda, reason)
    # The GAE span 1/(1 - gamma * lambda) should be at most ~T/6 so every step of a short
    # rollout gets an estimate of similar length instead of the tail being plain TD(0).
    gamma, steps = _gamma(b.info, b.case), b.steps
    lam = math.floor(min(0.95, (1 - 6 / steps) / gamma) * 20) / 20
    lam = max(0.8, round(lam, 2))
    span = 1 / (1 - gamma * lam)
    reason = (
        f"GAE averages returns over about 1/(1 - gamma*lambda) = "
        f"{span:.1f} steps; with T = {steps} steps per env that span should be at most "
        f"~T/6 so early and late steps of the rollout get comparable estimates "
        "(rounded down to 0.05, kept in 0.8-0.95)"
    )
    return Choice("advantage.gae_lambda", lam, reason)


# --- normalization and the policy -------------------------------------------------------------


def _normalize_obs(info: EnvInfo, case: UseCase) -> tuple[bool, str]:
    if case.normalize_obs is not None:
        if case is ATARI:
            return False, "SB3's CNN policy already scales pixels to [0, 1]"
        if case is RLHF:
            return False, "not applicable to token observations"
        return True, case.normalize_reason
    reach = max(abs(info.observation_high or 0.0), abs(info.observation_low or 0.0))
    narrowest = info.smallest_finite_range
    if reach > 10 or (narrowest is not None and narrowest < 0.1):
        what = (
            f"the observation bounds reach +-{reach:.3g}"
            if reach > 10
            else f"one observation feature spans only +-{narrowest:.3g}"
        )
        return True, (
            f"{what}, far from unit scale, so a running mean/std "
            "keeps the tanh network out of saturation"
        )
    if info.observation_kind == "discrete":
        return False, "SB3 one-hot encodes discrete observations, which are already unit scale"
    if narrowest is None and case.normalize_reward is None:  # continuous control
        return True, (
            "the observations are unbounded (a physics simulator's state), so their scale is "
            f"unknown; {case.normalize_reason}"
        )
    if narrowest is None:
        return False, "the observations carry no finite bounds to judge their scale by"
    return False, (
        f"the finite observation bounds are of order 1 (+-{narrowest:.2g} to +-{reach:g}); "
        "normalizing would add statistics that evaluation must share, for no gain"
    )


def derive_normalize_obs(b: Basis) -> Choice:
    return Choice("env.normalize.obs", *_normalize_obs(b.info, b.case))


def derive_normalize_reward(b: Basis) -> Choice:
    case = b.case
    if b.info.step_penalty is not None and case.normalize_reward is False and case is CLASSIC:
        reason = penalty_reward_reason(b.info.step_penalty, _gamma(b.info, case))
        return Choice("env.normalize.reward", True, reason)
    if case.normalize_reward is None:  # continuous control: as the observations
        on = _normalize_obs(b.info, case)[0]
        reason = (
            "on with the observations: an env whose state is far from unit scale rarely pays "
            "unit-scale rewards; rewards are divided by a running std of the return"
            if on
            else "off with the observations: bounded, order-1 observations mark a small "
            "control task whose value targets the critic fits as they are; on Pendulum-v1 "
            "normalizing both made the gSDE policy unstable (a seed fell from -153 to -492 "
            "mid-run; without normalization -134 to -132 from 30k steps on)"
        )
        return Choice("env.normalize.reward", on, reason)
    reason = (
        f"{case.normalize_reason}; rewards are divided by a running std of the return"
        if case.normalize_reward
        else "the per-step rewards are already of order 1"
    )
    return Choice("env.normalize.reward", case.normalize_reward, reason)


# --- monitoring, evaluation and the run -------------------------------------------------------


def derive_evaluation_every(b: Basis) -> Choice:
    reason = "about ten evaluations over the run, for a learning curve"
    return Choice("evaluation.every_timesteps", max(b.batch, b.budget // 10), reason)


def derive_evaluation_episodes(b: Basis) -> Choice:
    return Choice("evaluation.episodes", 10, "10 deterministic (greedy) episodes per evaluation")


def derive_checkpoints_every(b: Basis) -> Choice:
    reason = "a checkpoint halfway and one at the end, so a crash loses at most half the run"
    return Choice("checkpoints.every_timesteps", max(b.batch, b.budget // 2), reason)


def derive_total_timesteps(b: Basis) -> Choice:
    reason = f"the requested budget of {fmt(b.budget)} env steps"
    return Choice("budget.total_timesteps", b.budget, reason)


def derive_seed(b: Basis) -> Choice:
    return Choice("budget.seed", 0, "repeat with --set budget.seed=N for more seeds")
