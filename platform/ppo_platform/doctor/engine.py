"""`diagnose`: a run's metric series (and its facts) in, ranked root causes out.

Pure functions: no MLflow, no torch. Callers load the metrics (tracking's read side, a
TensorBoard folder, the runner's memory) and hand them over as name -> [(step, value)].
"""

from __future__ import annotations

from collections.abc import Callable

from ppo_platform.doctor import rules_env, rules_explore, rules_lm, rules_step
from ppo_platform.doctor.series import Series, View
from ppo_platform.doctor.vocabulary import CauseId, Diagnosis, Finding, NotJudged, RunFacts
from ppo_platform.health.thresholds import LIMITS, Limits

Rule = Callable[[View, RunFacts, Limits], Finding | NotJudged | None]

GYM_RULES: tuple[Rule, ...] = (
    rules_env.env_crash,
    rules_env.observations_not_finite,
    rules_env.rewards_not_finite,
    rules_env.observation_scale,
    rules_env.reward_scale,
    rules_env.action_saturation,
    rules_step.step_too_large,
    rules_step.step_too_small,
    rules_step.critic_not_learning,
    rules_explore.entropy_collapse,
    rules_explore.std_collapse,
    rules_explore.no_reward_signal,
    rules_explore.horizon_too_short,
    rules_explore.rollout_too_short,
)
LM_RULES: tuple[Rule, ...] = (
    rules_lm.lm_kl_penalty_inert,
    rules_lm.lm_kl_runaway,
    rules_lm.lm_reward_hacking,
    rules_lm.lm_length_collapse,
    rules_lm.lm_length_at_limit,
    rules_lm.lm_group_no_signal,
)

# A cause that explains others: when it is found, they are its symptoms and are not listed.
EXPLAINS: dict[CauseId, tuple[CauseId, ...]] = {
    "env_crash": ("step_too_large", "critic_not_learning", "no_reward_signal"),
    "observations_not_finite": (
        "step_too_large",
        "step_too_small",
        "critic_not_learning",
        "entropy_collapse",
        "std_collapse",
        "no_reward_signal",
        "observation_scale",
    ),
    "rewards_not_finite": (
        "step_too_large",
        "step_too_small",
        "critic_not_learning",
        "reward_scale",
        "no_reward_signal",
    ),
    "reward_scale": ("critic_not_learning", "step_too_small"),
    "observation_scale": ("critic_not_learning",),
    "step_too_small": ("critic_not_learning", "horizon_too_short", "rollout_too_short"),
    # A step too large explains what follows it: the spread collapsed, the critic's targets
    # moved, the return went flat (the first-update collapse looks like no reward signal).
    "step_too_large": (
        "entropy_collapse",
        "std_collapse",
        "critic_not_learning",
        "no_reward_signal",
    ),
    "no_reward_signal": ("critic_not_learning", "step_too_small", "entropy_collapse"),
    "horizon_too_short": ("rollout_too_short",),
    # Exploration seen to stop explains a stalled return better than a guess from the spec.
    "entropy_collapse": ("horizon_too_short", "rollout_too_short"),
    "std_collapse": ("horizon_too_short", "rollout_too_short"),
}


def is_language_model(view: View, facts: RunFacts) -> bool:
    return facts.algorithm == "ppo_lm" or view.has("lm_kl_ref") or view.has("lm_reward")


def diagnose(series: Series, facts: RunFacts | None = None, limits: Limits = LIMITS) -> Diagnosis:
    """Ranked likely root causes of a run's trouble (most likely first; none for a healthy
    run) and the causes that could not be judged for want of a metric."""
    facts = facts or RunFacts()
    view = View(series)
    rules = LM_RULES if is_language_model(view, facts) else GYM_RULES
    found: list[Finding] = []
    not_judged: list[NotJudged] = []
    for rule in rules:
        verdict = rule(view, facts, limits)
        if isinstance(verdict, Finding):
            found.append(verdict)
        elif isinstance(verdict, NotJudged):
            not_judged.append(verdict)
    explained = {symptom for f in found for symptom in EXPLAINS.get(f.cause, ())}
    kept = [f for f in found if f.cause not in explained]
    kept.sort(key=lambda f: (-f.confidence, f.first_step if f.first_step is not None else -1))
    return Diagnosis(kept, not_judged)
