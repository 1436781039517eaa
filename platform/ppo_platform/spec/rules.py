"""Refusal rules of the skill-ppo-trainer template: settings that are well-formed but unsafe.

Every entry point (validate, run, sweep, tune, plan, the API) goes through `refusals()`, so the
rules live in exactly one place. 30 epochs and epsilon 0.3 are allowed; one more is not.
A refusal's SpecIssue carries the rule's name in `rule`, so `SpecError.refused` and the API
know it is a refusal without reading its message.
"""

from __future__ import annotations

from ppo_platform.errors import SpecIssue
from ppo_platform.spec.experiment import ExperimentSpec, KLPenaltySpec, SurrogateSpec, UpdateSpec
from ppo_platform.spec.lm import LMExperimentSpec
from ppo_platform.spec.lm_rules import LM_REDUCTION_RULE as LM_REDUCTION_RULE
from ppo_platform.spec.lm_rules import LM_REFERENCE_RULE as LM_REFERENCE_RULE
from ppo_platform.spec.lm_rules import lm_refusals
from ppo_platform.spec.trust_region import MAX_CLIP_EPSILON as MAX_CLIP_EPSILON
from ppo_platform.spec.trust_region import MAX_EPOCHS as MAX_EPOCHS
from ppo_platform.spec.trust_region import TRUST_REGION_RULE as TRUST_REGION_RULE
from ppo_platform.spec.trust_region import clip_epsilon_issue, epochs_issue
from ppo_platform.spec.tune_rules import tune_objective_issues

AnySpec = ExperimentSpec | LMExperimentSpec

PPO_ALGORITHMS = frozenset({"ppo", "ppo_kl"})
# Every algorithm the PPO refusal rules hold to: the gymnasium ones and PPO on language models.
RULED_ALGORITHMS = PPO_ALGORITHMS | {"ppo_lm"}

# Rule names, as carried by `SpecIssue.rule`.
ADVANTAGE_RULE = "unnormalized_advantages"
MONITORING_RULE = "unmonitored_run"
SEARCH_SPACE_RULE = "unsafe_search_space"
ROLLOUT_BUDGET_RULE = "rollout_over_budget"


def refuse_unsafe_trust_region(spec: AnySpec) -> list[SpecIssue]:
    issues = [epochs_issue(spec.update.epochs)]
    if spec.algorithm in RULED_ALGORITHMS:
        clip = spec.surrogate.clip_epsilon
        issues.append(clip_epsilon_issue(clip.start, "surrogate.clip_epsilon.start"))
        if clip.schedule == "linear":  # a schedule may rise: its end must be safe too
            issues.append(clip_epsilon_issue(clip.end, "surrogate.clip_epsilon.end"))
    return [issue for issue in issues if issue is not None]


def refuse_unnormalized_advantages(spec: AnySpec) -> list[SpecIssue]:
    if spec.algorithm not in RULED_ALGORITHMS or spec.surrogate.normalize_advantage:
        return []
    return [
        SpecIssue(
            path="surrogate.normalize_advantage",
            value=False,
            message="refused: PPO without advantage normalization (it breaks PPO on most "
            "benchmarks: the learning rate cannot suit every batch's advantage scale).",
            fix="set surrogate.normalize_advantage: true.",
            rule=ADVANTAGE_RULE,
        )
    ]


def refuse_unmonitored_run(spec: AnySpec) -> list[SpecIssue]:
    if spec.algorithm not in RULED_ALGORITHMS:
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
                    rule=MONITORING_RULE,
                )
            )
    return issues


# Spec fields A2C has no use for, and why. Refused when set away from their default (a
# resolved spec, as stored with every run, holds the defaults and must still load).
A2C_IGNORED_FIELDS = {
    "update.epochs": "A2C takes one gradient step per rollout",
    "update.minibatch_size": "A2C uses the whole rollout as one batch",
    "surrogate.clip_epsilon": "A2C has no probability ratio to clip",
    "surrogate.clip_value": "A2C does not clip the value update",
    "surrogate.target_kl": "A2C runs no epochs that a KL target could stop early",
    "kl_penalty.target": "only algorithm: ppo_kl has a KL penalty",
    "kl_penalty.beta_init": "only algorithm: ppo_kl has a KL penalty",
    "kl_penalty.rule": "only algorithm: ppo_kl has a KL penalty",
}


def refuse_fields_a2c_ignores(spec: AnySpec) -> list[SpecIssue]:
    """A2C would silently ignore PPO-only settings: refuse them instead."""
    if spec.algorithm != "a2c":
        return []
    defaults = {
        "update": UpdateSpec.model_validate({}),
        "surrogate": SurrogateSpec.model_validate({}),
        "kl_penalty": KLPenaltySpec.model_validate({}),
    }
    issues = []
    for path, why in A2C_IGNORED_FIELDS.items():
        section, field = path.split(".")
        value, default = getattr(getattr(spec, section), field), getattr(defaults[section], field)
        if value == default:
            continue
        shown = value.model_dump() if hasattr(value, "model_dump") else value
        default_shown = default.model_dump() if hasattr(default, "model_dump") else default
        issues.append(
            SpecIssue(
                path=path,
                value=shown,
                message=f"does not apply to algorithm: a2c ({why}); it would be silently ignored.",
                fix=f"remove {path} (default: {default_shown!r}), or use algorithm: ppo or ppo_kl.",
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
    if spec.budget.seeds is not None and (spec.sweep is not None or spec.tune is not None):
        search = "sweep" if spec.sweep is not None else "tune"
        issues.append(
            SpecIssue(
                path="budget.seeds",
                value=spec.budget.seeds,
                message=f"a batch of seeds beside {search}: the {search} chooses its runs' seeds.",
                fix="remove budget.seeds; a sweep takes its seeds from sweep.seeds, a study "
                "from tune (seeds_min, seeds_max, verify.seeds).",
            )
        )
    # A2C has no minibatches (update.minibatch_size is refused for it unless left default).
    if spec.algorithm in PPO_ALGORITHMS and spec.update.minibatch_size > spec.batch_size:
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


def rollout_over_budget_issue(spec: ExperimentSpec) -> SpecIssue | None:
    """SB3 collects whole rollouts: one larger than the budget would train past the budget.
    The service refuses it (its step limit must hold); the CLI trains the whole rollout."""
    if spec.batch_size <= spec.budget.total_timesteps:
        return None
    return SpecIssue(
        path="budget.total_timesteps",
        value=spec.budget.total_timesteps,
        message=f"refused: one rollout, env.n_envs x rollout.n_steps = {spec.env.n_envs} x "
        f"{spec.rollout.n_steps} = {spec.batch_size} env steps, is larger than the budget; "
        "training always collects whole rollouts, so it would train past the budget.",
        fix=f"raise budget.total_timesteps to at least {spec.batch_size}, or collect a "
        "smaller rollout (fewer env.n_envs or rollout.n_steps).",
        rule=ROLLOUT_BUDGET_RULE,
    )


def trained_steps(spec: ExperimentSpec) -> int:
    """The env steps a run of `spec` really trains: its budget rounded up to whole rollouts."""
    rollouts = -(-spec.budget.total_timesteps // spec.batch_size)
    return rollouts * spec.batch_size


_TRUST_REGION_CHECKS = {
    "update.epochs": epochs_issue,
    "surrogate.clip_epsilon": clip_epsilon_issue,
    "surrogate.clip_epsilon.start": clip_epsilon_issue,
    "surrogate.clip_epsilon.end": clip_epsilon_issue,
    "surrogate.clip.low": clip_epsilon_issue,
    "surrogate.clip.high": clip_epsilon_issue,
}


def search_space_refusal(param: str, bound: str, value: object, refused: SpecIssue) -> SpecIssue:
    """The one refusal of a `tune:` space bound that can sample a value a rule refuses."""
    return SpecIssue(
        path=f"tune.space.{param}.{bound}",
        value=value,
        message=f"refused: the search space can sample {param} = {value}: "
        + refused.message.removeprefix("refused: "),
        fix=f"keep the search space of {param} within the limit: {refused.fix}",
        rule=SEARCH_SPACE_RULE,
    )


def refuse_unsafe_search_space(spec: AnySpec) -> list[SpecIssue]:
    """A `tune:` space that could sample a refused K or epsilon is refused before anything runs."""
    if spec.tune is None:
        return []
    issues = []
    for param, dist in spec.tune.space.items():
        check = _TRUST_REGION_CHECKS.get(param)
        if check is None:
            continue
        if dist.type == "categorical":
            bounds = [
                (f"choices[{i}]", v)
                for i, v in enumerate(dist.choices)
                if isinstance(v, (int, float)) and not isinstance(v, bool)
            ]
        else:
            bounds = [("high", dist.high)]
        for bound, value in bounds:
            issue = check(value, param)
            if issue is not None:
                issues.append(search_space_refusal(param, bound, value, issue))
    return issues


def refusals(spec: AnySpec) -> list[SpecIssue]:
    """Every refusal rule that the spec breaks, in a stable order."""
    return [
        *refuse_unsafe_trust_region(spec),
        *refuse_unnormalized_advantages(spec),
        *refuse_unmonitored_run(spec),
        *refuse_fields_a2c_ignores(spec),
        *refuse_unsafe_search_space(spec),
        *lm_refusals(spec),
        *refuse_searched_held_out_seeds(spec),
        *tune_objective_issues(spec),
    ]


def refuse_searched_held_out_seeds(spec: AnySpec) -> list[SpecIssue]:
    """Held-out seeds must be fresh: a seed the search trained on verifies nothing."""
    if spec.tune is None or spec.tune.verify is None:
        return []
    searched = range(spec.budget.seed, spec.budget.seed + spec.tune.seeds_max)
    overlap = sorted(set(spec.tune.verify.seeds) & set(searched))
    if not overlap:
        return []
    return [
        SpecIssue(
            path="tune.verify.seeds",
            value=overlap,
            message=f"held-out seeds {overlap} are also searched: the search runs seeds "
            f"budget.seed .. budget.seed + (tune.racing.seeds_max or tune.seeds_per_trial) - 1 = "
            f"{searched.start} .. {searched.stop - 1}.",
            fix=f"use held-out seeds of {searched.stop} or more (or below {searched.start}).",
        )
    ]
