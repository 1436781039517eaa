"""The trust-region limits of the refusal rules: K above 30 epochs, clip epsilon above 0.3.

One place for the numbers and their refusals; `spec.rules` (every algorithm) and
`spec.lm_rules` (the LM spec's clip bounds) both refuse through these functions.
"""

from __future__ import annotations

from ppo_platform.errors import SpecIssue

MAX_EPOCHS = 30
MAX_CLIP_EPSILON = 0.3
TRUST_REGION_RULE = "unsafe_trust_region"


def epochs_issue(epochs: float, path: str = "update.epochs") -> SpecIssue | None:
    """K above 30 reuses one rollout so often that the policy leaves the trust region."""
    if epochs <= MAX_EPOCHS:
        return None
    return SpecIssue(
        path=path,
        value=epochs,
        message=f"refused: K = {epochs} epochs is above the limit of {MAX_EPOCHS} "
        "(unsafe trust region: the policy drifts too far from the one that collected the data).",
        fix=f"use at most {MAX_EPOCHS} epochs; 3-10 is typical, 20 for small classic-control nets.",
        rule=TRUST_REGION_RULE,
    )


def clip_epsilon_issue(epsilon: float, path: str = "surrogate.clip_epsilon") -> SpecIssue | None:
    """Epsilon above 0.3 lets a single update move action probabilities too far."""
    if epsilon <= MAX_CLIP_EPSILON:
        return None
    return SpecIssue(
        path=path,
        value=epsilon,
        message=f"refused: clip epsilon {epsilon} is above the limit of {MAX_CLIP_EPSILON} "
        "(unsafe trust region).",
        fix=f"use a clip epsilon of at most {MAX_CLIP_EPSILON}; 0.2 is the standard value.",
        rule=TRUST_REGION_RULE,
    )
