"""Derive every hyperparameter from the env, the budget and the use case, with a reason each.

First size the batch N x T, the minibatch and K (`sizing.size_rollout`); then every rule in
`RULES` (`derive_rules`) turns that into one spec field's value and its reason. The planner
never emits K > 30 or epsilon > 0.3 (`rules.MAX_EPOCHS`, `rules.MAX_CLIP_EPSILON`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ppo_platform.errors import SpecError, SpecIssue
from ppo_platform.planner import derive_diagnostics as diagnostics_rule
from ppo_platform.planner import derive_policy as policy_rule
from ppo_platform.planner import derive_rules as rule
from ppo_platform.planner.derive_rules import Choice
from ppo_platform.planner.env_info import PLAN_SOURCE, EnvInfo
from ppo_platform.planner.sizing import GOOD_UPDATES, Basis, size_rollout
from ppo_platform.planner.use_cases import UseCase

MIN_UPDATES = 10  # below this a plan cannot learn anything: refuse the budget
MAX_BUDGET = 10_000_000_000  # budget.total_timesteps' upper limit in the spec


@dataclass(frozen=True)
class Derivation:
    """The planned values plus the numbers the plan's text refers to."""

    choices: tuple[Choice, ...]
    updates: int
    warnings: tuple[str, ...]


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


# Every planned spec field, in the order the plan shows them.
RULES: tuple[Callable[[Basis], Choice], ...] = (
    rule.derive_n_envs,
    rule.derive_n_steps,
    rule.derive_epochs,
    rule.derive_minibatch_size,
    rule.derive_learning_rate,
    rule.derive_max_grad_norm,
    rule.derive_clip_epsilon,
    rule.derive_value_coef,
    rule.derive_entropy_coef,
    rule.derive_normalize_advantage,
    rule.derive_gamma,
    rule.derive_gae_lambda,
    rule.derive_normalize_obs,
    rule.derive_normalize_reward,
    policy_rule.derive_env_kwargs,
    policy_rule.derive_wrappers,
    policy_rule.derive_net_arch,
    policy_rule.derive_activation,
    policy_rule.derive_log_std_init,
    policy_rule.derive_ortho_init,
    policy_rule.derive_use_sde,
    policy_rule.derive_sde_sample_freq,
    diagnostics_rule.derive_diagnostics_window,
    diagnostics_rule.derive_kl_healthy_max,
    diagnostics_rule.derive_kl_alert,
    diagnostics_rule.derive_on_alert,
    rule.derive_evaluation_every,
    rule.derive_evaluation_episodes,
    policy_rule.derive_evaluation_deterministic,
    rule.derive_checkpoints_every,
    rule.derive_total_timesteps,
    rule.derive_seed,
)


def budget_warnings(b: Basis) -> tuple[str, ...]:
    """The budget is payable but buys fewer updates than PPO usually needs."""
    if b.updates >= 0.9 * GOOD_UPDATES:  # "~100": a power-of-two batch may land a few short
        return ()
    return (
        f"the budget buys only {b.updates} updates (fewer than the ~{GOOD_UPDATES} "
        f"PPO usually needs to learn): raise --budget to {GOOD_UPDATES * b.batch:,} or more.",
    )


def derive(info: EnvInfo, budget: int, case: UseCase) -> Derivation:
    """Every planned value with its reason."""
    basis = size_rollout(info, budget, case)
    choices = tuple(derive_field(basis) for derive_field in RULES)
    return Derivation(choices, basis.updates, budget_warnings(basis))
