"""`diagnose`: a run's metric series (and its facts) in, ranked root causes out.

Pure functions: no MLflow, no torch. Callers load the metrics (tracking's read side, a
TensorBoard folder, the runner's memory) and hand them over as name -> [(step, value)].
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from ppo_platform.doctor import rules_env, rules_explore, rules_lm, rules_step
from ppo_platform.doctor.series import Series, View
from ppo_platform.doctor.vocabulary import CauseId, Diagnosis, Finding, NotJudged, RunFacts
from ppo_platform.health.thresholds import LIMITS, Limits

Rule = Callable[[View, RunFacts, Limits], Finding | NotJudged | None]

GYM_RULES: tuple[Rule, ...] = (
    rules_env.env_crash,
    rules_env.observations_not_finite,
    rules_env.rewards_not_finite,
    rules_step.diverged,
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
# Rules whose evidence is one event the env or the run reports (a crash, a NaN): judged on a
# run of any length. Every other rule reads a trend and needs `min_updates` updates at least.
EVENT_RULES: tuple[Rule, ...] = (
    rules_env.env_crash,
    rules_env.observations_not_finite,
    rules_env.rewards_not_finite,
    rules_step.diverged,
)
# The signals whose points count the updates a run logged (the most any of them has).
UPDATE_SIGNALS = ("kl", "explained_variance", "episode_return", "lm_kl_ref", "lm_reward")
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


def strongest_per_cause(found: list[Finding]) -> list[Finding]:
    """One finding per cause (two rules can name one: a trend and an event), the surest."""
    best: dict[CauseId, Finding] = {}
    for finding in found:
        if finding.cause not in best or finding.confidence > best[finding.cause].confidence:
            best[finding.cause] = finding
    return list(best.values())


def thin_evidence(view: View, limits: Limits) -> str | None:
    """Why a run is too short to judge a trend on (None: it is long enough)."""
    updates = max(len(view.points(signal)) for signal in UPDATE_SIGNALS)
    if updates >= limits.min_updates:
        return None
    return (
        f"the run logged {updates} update(s); a cause is judged on {limits.min_updates} at "
        "least: too little evidence to tell (train longer, or judge another seed)"
    )


def diagnose(series: Series, facts: RunFacts | None = None, limits: Limits = LIMITS) -> Diagnosis:
    """Ranked likely root causes of a run's trouble (most likely first; none for a healthy
    run) and the causes that could not be judged for want of a metric. A run too short to
    judge a trend on is judged only on events (a crash, a NaN): every other cause is "not
    judged" with the reason, never a confident guess."""
    facts = facts or RunFacts()
    view = View(series)
    rules = LM_RULES if is_language_model(view, facts) else GYM_RULES
    thin = thin_evidence(view, limits)
    found: list[Finding] = []
    not_judged: list[NotJudged] = []
    for rule in rules:
        if thin is not None and rule not in EVENT_RULES:
            not_judged.append(NotJudged(cast(CauseId, rule.__name__), thin))
            continue
        verdict = rule(view, facts, limits)
        if isinstance(verdict, Finding):
            found.append(verdict)
        elif isinstance(verdict, NotJudged):
            not_judged.append(verdict)
    explained = {symptom for f in found for symptom in EXPLAINS.get(f.cause, ())}
    kept = strongest_per_cause([f for f in found if f.cause not in explained])
    named = {f.cause for f in kept}
    not_judged = [n for n in not_judged if n.cause not in named]
    kept.sort(key=lambda f: (-f.confidence, f.first_step if f.first_step is not None else -1))
    return Diagnosis(kept, not_judged, thin)
