"""Derive every hyperparameter from the env, the budget and the use case, with a reason each.

The rules, in order: size the batch N x T so the budget buys enough updates (and, for
continuous control, so a rollout covers whole episodes); split it into minibatches that divide
it; pick K so each rollout gets a similar number of gradient steps; scale the LR with the
minibatch; set gamma from the episode horizon and lambda from the rollout length. The planner
never emits K > 30 or epsilon > 0.3 (`rules.MAX_EPOCHS`, `rules.MAX_CLIP_EPSILON`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ppo_platform.errors import SpecError, SpecIssue
from ppo_platform.planner.env_info import PLAN_SOURCE, EnvInfo
from ppo_platform.planner.render import num
from ppo_platform.planner.use_cases import ATARI, CLASSIC, RLHF, UseCase
from ppo_platform.spec.rules import MAX_CLIP_EPSILON, MAX_EPOCHS

MIN_UPDATES = 10  # below this a plan cannot learn anything: refuse the budget
GOOD_UPDATES = 100  # below this the plan warns: PPO usually needs ~100 updates to learn
MAX_BUDGET = 10_000_000_000  # budget.total_timesteps' upper limit in the spec
GRADIENT_STEPS_PER_ROLLOUT = 20  # classic control: rl-zoo CartPole's 20 epochs x 1 minibatch
CLASSIC_MINIBATCH = 256
BASE_LR, BASE_MINIBATCH = 3e-4, 64  # seed 002's control LR at SB3's default minibatch


@dataclass(frozen=True)
class Choice:
    """One planned value: the spec field it sets, the value, and why (for a person)."""

    path: str
    value: Any
    reason: str


@dataclass(frozen=True)
class Derivation:
    """The planned values plus the numbers the plan's text refers to."""

    choices: tuple[Choice, ...]
    updates: int
    warnings: tuple[str, ...]


def _pow2(x: float) -> int:
    """Nearest power of two in log space (250 -> 256, 750 -> 1024)."""
    return 2 ** max(0, round(math.log2(max(x, 1.0))))


def _fmt(x: float) -> str:
    return f"{x:,}" if isinstance(x, int) else f"{x:g}"


def minimum_budget(case: UseCase) -> int:
    """The smallest budget that still gives MIN_UPDATES updates of the smallest rollout."""
    return MIN_UPDATES * case.n_envs * case.min_steps


def _budget_error(message: str, budget: object, fix: str) -> SpecError:
    return SpecError([SpecIssue("budget", message, budget, fix=fix)], PLAN_SOURCE)


def check_budget(budget: object) -> int:
    """The budget as an int, or a SpecError if it is not a positive, sane number of env steps."""
    if isinstance(budget, bool) or not isinstance(budget, int):
        raise _budget_error(
            "must be a whole number of env steps.", budget, "pass e.g. --budget 100000."
        )
    if budget <= 0:
        raise _budget_error(
            "must be a positive number of env steps.", budget, "pass e.g. --budget 100000."
        )
    if budget > MAX_BUDGET:
        raise _budget_error(
            f"is absurd: more than {MAX_BUDGET:.0e} env steps (the spec's limit).",
            budget,
            "plan at most 1e10 env steps; 1e5-1e7 is typical.",
        )
    return budget


def check_budget_covers(budget: int, case: UseCase) -> None:
    """SpecError if the budget cannot pay for even MIN_UPDATES updates of the smallest rollout."""
    least = minimum_budget(case)
    if budget < least:
        good = GOOD_UPDATES * case.n_envs * case.min_steps
        raise _budget_error(
            f"is too small to plan: {case.name} needs at least {least:,} env steps "
            f"({MIN_UPDATES} updates of the smallest rollout, {case.n_envs} envs x "
            f"{case.min_steps} steps).",
            budget,
            f"pass --budget {least} or more ({good:,} or more for the ~{GOOD_UPDATES} updates "
            "PPO usually needs).",
        )


def _rollout(info: EnvInfo, budget: int, case: UseCase) -> tuple[int, int, list[str]]:
    """N and T: N fixed by the use case, T sized by the budget and the episode horizon."""
    n = case.n_envs
    notes = []
    if case.min_steps == case.max_steps:
        return n, case.min_steps, [f"the seed's fixed rollout length for {case.name}"]
    batch = _pow2(budget / case.target_updates) if case.target_updates else n * case.min_steps
    batch = min(max(batch, n * case.min_steps), case.max_batch, n * case.max_steps)
    steps = batch // n
    notes.append(
        f"{_fmt(budget)} steps / ~{case.target_updates} updates = "
        f"{_fmt(budget // case.target_updates)} transitions per rollout, rounded to a power "
        f"of two: {batch}"
    )
    if case.cover_episodes and info.horizon and steps < info.horizon:
        longer = min(2 ** math.ceil(math.log2(info.horizon)), case.max_steps)
        if budget // (n * longer) >= GOOD_UPDATES // 2:
            steps = longer
            notes.append(
                f"raised to T = {steps} so each env's rollout holds a whole "
                f"{info.horizon}-step episode"
            )
    return n, steps, notes


def _minibatch(batch: int, case: UseCase) -> int:
    if case is CLASSIC or case is RLHF:
        return min(batch, CLASSIC_MINIBATCH)
    if case is ATARI:
        return batch // 4
    return max(64, batch // 32)  # continuous: many small steps, at most 32 per epoch


def _epochs(minibatches: int, case: UseCase) -> int:
    if case is ATARI or case is RLHF:
        return 4
    if case is CLASSIC:
        return min(20, max(4, round(GRADIENT_STEPS_PER_ROLLOUT / minibatches)))
    return 10


def _gamma(info: EnvInfo, case: UseCase) -> tuple[float, str]:
    if case.gamma is not None:
        if case is RLHF:
            return case.gamma, (
                "the reward model scores the whole response at its "
                "end, so no token's credit should be discounted (seed 002)"
            )
        return case.gamma, "the seeds' standard value for long episodes"
    if info.horizon is None:
        return 0.99, "the seeds' default, since the episode horizon is unknown"
    gamma = min(0.99, max(0.9, round(1 - 10 / info.horizon, 2)))
    return gamma, (
        f"the discount horizon 1/(1-gamma) = {1 / (1 - gamma):.0f} steps "
        f"is about a tenth of the {info.horizon}-step episode ({info.horizon_source}), "
        "long enough to see an action's consequences, short enough to keep value "
        "targets low-variance (clamped to 0.9-0.99)"
    )


def _lambda(steps: int, gamma: float, case: UseCase) -> tuple[float, str]:
    if case.gae_lambda is not None:
        return case.gae_lambda, "the seeds' standard GAE(0.95) bias/variance trade-off"
    # The GAE span 1/(1 - gamma * lambda) should be at most ~T/6 so every step of a short
    # rollout gets an estimate of similar length instead of the tail being plain TD(0).
    lam = math.floor(min(0.95, (1 - 6 / steps) / gamma) * 20) / 20
    lam = max(0.8, round(lam, 2))
    span = 1 / (1 - gamma * lam)
    return lam, (
        f"GAE averages returns over about 1/(1 - gamma*lambda) = "
        f"{span:.1f} steps; with T = {steps} steps per env that span should be at most "
        f"~T/6 so early and late steps of the rollout get comparable estimates "
        "(rounded down to 0.05, kept in 0.8-0.95)"
    )


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
    if narrowest is None:
        return False, "the observations carry no finite bounds to judge their scale by"
    return False, (
        f"the finite observation bounds are of order 1 (+-{narrowest:.2g} to +-{reach:g}); "
        "normalizing would add statistics that evaluation must share, for no gain"
    )


def derive(info: EnvInfo, budget: int, case: UseCase) -> Derivation:
    """Every planned value with its reason."""
    n, steps, rollout_notes = _rollout(info, budget, case)
    batch = n * steps
    minibatch = _minibatch(batch, case)
    minibatches = batch // minibatch
    epochs = min(_epochs(minibatches, case), MAX_EPOCHS)
    updates = math.ceil(budget / batch)
    lr = (
        case.lr_cap
        if case in (ATARI, RLHF)
        else min(case.lr_cap, BASE_LR * minibatch / BASE_MINIBATCH)
    )
    lr = float(f"{lr:.2g}")
    gamma, gamma_reason = _gamma(info, case)
    lam, lam_reason = _lambda(steps, gamma, case)
    clip = min(case.clip_epsilon, MAX_CLIP_EPSILON)
    norm_obs, norm_obs_reason = _normalize_obs(info, case)
    window = min(10, max(3, updates // 50))
    horizon_note = (
        f"against the {info.horizon}-step episode limit one rollout holds "
        f"{batch} / {info.horizon} = {batch / info.horizon:.2f} full-length episodes of steps"
        if info.horizon
        else "the episode horizon is unknown"
    )
    warnings = []
    if updates < 0.9 * GOOD_UPDATES:  # "~100": a power-of-two batch may land a few short
        warnings.append(
            f"the budget buys only {updates} updates (fewer than the ~{GOOD_UPDATES} "
            f"PPO usually needs to learn): raise --budget to {GOOD_UPDATES * batch:,} or more."
        )

    choices = [
        Choice(
            "env.n_envs",
            n,
            (
                "sized for the stand-in env as in a classic-control plan; in the language-model "
                "trainer read N as prompts per rollout batch (typically 64-512)"
                if case is RLHF
                else f"{case.n_envs_reason or case.source}; parallel envs decorrelate the "
                "samples of one rollout"
            ),
        ),
        Choice(
            "rollout.n_steps",
            steps,
            (
                ("stand-in sizing: " if case is RLHF else "")
                + "; ".join(rollout_notes)
                + f"; {horizon_note}; that gives about {updates} updates"
                + (
                    ". Rollouts that stop mid-episode are fine: GAE "
                    "bootstraps from the value at the cut"
                    if info.horizon and batch < info.horizon
                    else ""
                )
            ),
        ),
        Choice("update.epochs", epochs, _epochs_reason(epochs, minibatches, case)),
        Choice(
            "update.minibatch_size",
            minibatch,
            (
                f"divides the batch of {batch} into {minibatches} equal "
                f"minibatch{'es' if minibatches > 1 else ''}"
                + _minibatch_note(case, batch, minibatch)
            ),
        ),
        Choice(
            "update.learning_rate",
            {"start": lr, "schedule": case.lr_schedule},
            _lr_reason(lr, minibatch, case),
        ),
        Choice(
            "update.max_grad_norm",
            0.5,
            "RL gradients occasionally explode; clipping the "
            "global norm is a must-have detail (seed 002)",
        ),
        Choice(
            "surrogate.clip_epsilon",
            {"start": clip, "schedule": case.clip_schedule},
            _clip_reason(clip, case),
        ),
        Choice(
            "surrogate.value_coef",
            case.value_coef,
            "the seeds' standard weight of "
            "the value loss (separate actor and critic networks, so it only scales the critic)",
        ),
        Choice("surrogate.entropy_coef", case.entropy_coef, _entropy_reason(case)),
        Choice(
            "surrogate.normalize_advantage",
            True,
            "always on: without it the advantage scale "
            "changes from batch to batch and no single LR fits; skipping it breaks PPO on most "
            "benchmarks (seeds 000 and 002). The planner refuses to turn it off",
        ),
        Choice("advantage.gamma", gamma, gamma_reason),
        Choice("advantage.gae_lambda", lam, lam_reason),
        Choice("env.normalize.obs", norm_obs, norm_obs_reason),
        Choice(
            "env.normalize.reward",
            case.normalize_reward,
            (
                f"{case.normalize_reason}; rewards are divided by a running std of the return"
                if case.normalize_reward
                else "the per-step rewards are already of order 1"
            ),
        ),
        Choice(
            "policy.net_arch",
            list(case.net_arch),
            (
                "the Nature CNN's 512 features feed the policy and value heads directly"
                if case is ATARI
                else "two small hidden layers (SB3's default) are plenty "
                "for low-dimensional observations"
            ),
        ),
        Choice(
            "policy.activation",
            case.activation,
            ("as in the Nature CNN" if case is ATARI else "SB3's default for MLP policies"),
        ),
        Choice(
            "diagnostics.window",
            window,
            (
                "a signal that holds this many updates in a row is 'sustained' "
                f"(~2% of the {updates} updates, kept in 3-10)"
            ),
        ),
        Choice(
            "diagnostics.on_alert",
            "warn",
            "alerts are logged to MLflow and shown while "
            "training; switch to stop to end a run on the first critical alert",
        ),
        Choice(
            "evaluation.every_timesteps",
            max(batch, budget // 10),
            ("about ten evaluations over the run, for a learning curve"),
        ),
        Choice("evaluation.episodes", 10, "10 deterministic (greedy) episodes per evaluation"),
        Choice(
            "checkpoints.every_timesteps",
            max(batch, budget // 2),
            "a checkpoint halfway and one at the end, so a crash loses at most half the run",
        ),
        Choice(
            "budget.total_timesteps", budget, f"the requested budget of {_fmt(budget)} env steps"
        ),
        Choice("budget.seed", 0, "repeat with --set budget.seed=N for more seeds"),
    ]
    return Derivation(tuple(choices), updates, tuple(warnings))


def _epochs_reason(epochs: int, minibatches: int, case: UseCase) -> str:
    steps = epochs * minibatches
    if case is CLASSIC:
        return (
            f"about {GRADIENT_STEPS_PER_ROLLOUT} gradient steps per "
            f"rollout ({epochs} x {minibatches} minibatch{'es' if minibatches > 1 else ''} "
            f"= {steps}); small classic-control nets reuse a small batch safely, bigger batches "
            "need fewer passes. Kept in 4-20: K > 20 lets the policy drift from pi_old "
            f"(seed 000), and the skill refuses K > {MAX_EPOCHS}"
        )
    if case is RLHF:
        return (
            "RLHF uses 1-4 epochs (seed 002); a pretrained language model moves "
            "far per pass, and each batch of generations is expensive, so 4 is the upper end"
        )
    if case is ATARI:
        return (
            f"4 passes x {minibatches} minibatches = {steps} steps per rollout, "
            "the PPO paper's Atari setting (seed 002: 3-10)"
        )
    return (
        f"the seeds' standard 10 passes; with {minibatches} minibatches that is "
        f"{steps} small gradient steps per rollout (seed 002: 3-10; refused above {MAX_EPOCHS})"
    )


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


def _lr_reason(lr: float, minibatch: int, case: UseCase) -> str:
    decay = (
        "PPO benefits from decaying the LR linearly to zero (seed 000)"
        if case.lr_schedule == "linear"
        else "kept constant over the run"
    )
    if case is RLHF:
        return (
            f"{decay}; RLHF fine-tunes an already good model, so its LR is two to three "
            "orders of magnitude below control's (seed 002: 1e-6 to 1e-5)"
        )
    if case is ATARI:
        return f"{decay}; the standard Adam LR for the Nature CNN"
    base = f"{decay}. Seed 002's control LR is 3e-4 at SB3's minibatch of {BASE_MINIBATCH}"
    if minibatch == BASE_MINIBATCH:
        return f"{base}, the minibatch planned here"
    return (
        f"{base}; a minibatch of {minibatch} averages {minibatch / BASE_MINIBATCH:g}x as many "
        f"samples, so the LR scales with it (linear scaling rule), capped at {num(case.lr_cap)}"
    )


def _clip_reason(clip: float, case: UseCase) -> str:
    limit = f"the skill refuses epsilon > {MAX_CLIP_EPSILON}"
    if case.clip_schedule == "linear":
        return (
            "the trust region narrows in step with the LR as the policy converges "
            f"({'the PPO paper Atari value' if case is ATARI else 'rl-zoo'}); {limit}"
        )
    return f"the seeds' standard clip range; {limit}"


def _entropy_reason(case: UseCase) -> str:
    if case is ATARI:
        return "the seeds' standard entropy bonus keeps the categorical policy exploring"
    if case is RLHF:
        return (
            "RLHF sets no entropy bonus (seed 002); the KL penalty to the reference "
            "model already keeps the policy from collapsing"
        )
    return (
        "on dense-reward control tasks the stochastic policy explores on its own, and a "
        "bonus would hold back the decisive policy a high score needs (rl-zoo uses 0). Raise "
        "it to 0.01 if the policy's entropy collapses early and returns stall"
    )
