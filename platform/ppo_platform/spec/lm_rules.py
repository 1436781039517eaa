"""Refusal rules of `algorithm: ppo_lm` specs: what the LM spec must name, and settings the
LM trainer cannot honour (a KL without a reference, a group of one response).

`spec.rules.refusals` runs these beside the shared rules, so every entry point refuses alike.
"""

from __future__ import annotations

from ppo_platform.errors import SpecIssue
from ppo_platform.spec.lm import LMExperimentSpec, LMSurrogateSpec
from ppo_platform.spec.trust_region import clip_epsilon_issue

LM_REDUCTION_RULE = "unnamed_reduction"
LM_REFERENCE_RULE = "kl_without_reference"
LM_GROUP_RULE = "group_of_one"
LM_CLIP_BOUNDS_RULE = "inverted_clip_range"


def refuse_unnamed_reduction(spec: object) -> list[SpecIssue]:
    """Token-mean and sequence-mean PPO are different objectives: an LM spec names its own."""
    if not isinstance(spec, LMExperimentSpec) or spec.lm.reduction is not None:
        return []
    return [
        SpecIssue(
            path="lm.reduction",
            value=None,
            message="refused: the loss reduction is not named (token_mean and sequence_mean "
            "weigh long and short responses differently; both are called PPO).",
            fix="set lm.reduction: token_mean (every response token weighs the same; the "
            "usual choice) or sequence_mean (every response weighs the same).",
            rule=LM_REDUCTION_RULE,
        )
    ]


def refuse_kl_without_reference(spec: object) -> list[SpecIssue]:
    """A KL penalty needs something to measure the distance to."""
    if not isinstance(spec, LMExperimentSpec):
        return []
    if spec.lm.model.reference != "none" or spec.lm.kl.beta == 0:
        return []
    return [
        SpecIssue(
            path="lm.kl.beta",
            value=spec.lm.kl.beta,
            message="refused: a KL penalty (beta > 0) with lm.model.reference: none.",
            fix="set lm.model.reference: initial (the policy's starting weights) or a model "
            "folder, or lm.kl.beta: 0.",
            rule=LM_REFERENCE_RULE,
        )
    ]


def refuse_rewards_beside_reward_model(spec: object) -> list[SpecIssue]:
    """A reward model replaces the programmatic rewards: both set, the rewards would be
    dropped without a word."""
    if not isinstance(spec, LMExperimentSpec) or spec.lm.model.reward_model is None:
        return []
    if not spec.lm.rewards:
        return []
    names = [term.name for term in spec.lm.rewards]
    return [
        SpecIssue(
            path="lm.rewards",
            value=names,
            message=f"set together with lm.model.reward_model = {spec.lm.model.reward_model!r}, "
            "which scores every response instead: these rewards would never be used.",
            fix="remove lm.rewards (the reward model scores), or remove lm.model.reward_model "
            "(the rewards score).",
        )
    ]


def refuse_group_of_one(spec: object) -> list[SpecIssue]:
    """A group baseline compares responses to one prompt: a group of one has nothing to compare
    (its advantage would be 0 on every response, and nothing would train)."""
    if not isinstance(spec, LMExperimentSpec) or not spec.critic_free:
        return []
    advantage = spec.advantage
    if advantage.group_size >= 2:
        return []
    return [
        SpecIssue(
            path="advantage.group_size",
            value=advantage.group_size,
            message=f"refused: advantage.estimator {advantage.estimator} compares the responses "
            "to one prompt, and a group of one response has none to compare: every advantage "
            "would be 0.",
            fix="set advantage.group_size to 2 or more (4-16 is usual), or use "
            "advantage.estimator: gae (with a value head).",
            rule=LM_GROUP_RULE,
        )
    ]


def lm_refusals(spec: object) -> list[SpecIssue]:
    """Every LM refusal the spec breaks (none for other specs), in a stable order."""
    return [
        *refuse_unnamed_reduction(spec),
        *refuse_kl_without_reference(spec),
        *refuse_rewards_beside_reward_model(spec),
        *refuse_group_of_one(spec),
        *refuse_unsafe_clip_bounds(spec),
        *refuse_adaptive_kl_from_zero(spec),
    ]


def refuse_unsafe_clip_bounds(spec: object) -> list[SpecIssue]:
    """Clip-Higher's bounds obey the trust-region limit (each side at most 0.3), high is not
    below low, and they are not set beside a clip_epsilon they would silently replace."""
    if not isinstance(spec, LMExperimentSpec) or spec.surrogate.clip is None:
        return []
    clip = spec.surrogate.clip
    issues = [
        clip_epsilon_issue(clip.low, "surrogate.clip.low"),
        clip_epsilon_issue(clip.high, "surrogate.clip.high"),
    ]
    if clip.high < clip.low:
        issues.append(
            SpecIssue(
                path="surrogate.clip.high",
                value=clip.high,
                message=f"refused: clip.high {clip.high} is below clip.low {clip.low}: the "
                "range would be tighter for raising a token's probability than for lowering "
                "it, the opposite of Clip-Higher.",
                fix=f"set surrogate.clip.high to at least {clip.low} (e.g. low 0.2, high "
                "0.28), or drop surrogate.clip for a symmetric clip_epsilon.",
                rule=LM_CLIP_BOUNDS_RULE,
            )
        )
    # Set away from its default: a resolved spec (stored with every run) holds the default
    # beside `clip` and must still load.
    if spec.surrogate.clip_epsilon != LMSurrogateSpec().clip_epsilon:
        issues.append(
            SpecIssue(
                path="surrogate.clip_epsilon",
                value=spec.surrogate.clip_epsilon.start,
                message="set together with surrogate.clip, whose bounds replace it: it would "
                "never be used.",
                fix="remove surrogate.clip_epsilon (surrogate.clip sets both sides), or remove "
                "surrogate.clip.",
            )
        )
    return [issue for issue in issues if issue is not None]


def refuse_adaptive_kl_from_zero(spec: object) -> list[SpecIssue]:
    """An adaptive beta moves by factors of 2: from 0 it could never move."""
    if not isinstance(spec, LMExperimentSpec) or spec.lm.kl.target is None:
        return []
    if spec.lm.kl.beta > 0:
        return []
    return [
        SpecIssue(
            path="lm.kl.beta",
            value=0.0,
            message=f"beta 0 with an adaptive target ({spec.lm.kl.target}): the rule doubles or "
            "halves beta, so it would stay 0 and the target would never be sought.",
            fix="start beta above 0 (e.g. 0.05), or set lm.kl.target: null for no KL term.",
        )
    ]
