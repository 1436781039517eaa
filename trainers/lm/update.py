"""The PPO update over a rollout of responses: K epochs of shuffled minibatches of sequences.

The policy term is the named objective of `ppo_platform.trainers.lm.objectives` (PPO-Clip, GSPO,
CISPO)
over the action mask with the named reduction; the value loss and entropy use the same mask
and reduction.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ppo_platform.trainers.losses import PolicyLossOutput, Reduction

from .advantages import AdvantageScope, kl_to_reference, normalize
from .batch import RolloutBatch
from .errors import LMTrainerError
from .objectives import OBJECTIVES, ClipRange, Objective, policy_objective
from .policy import TokenTerms

# Why token_mean is the default: every action token is one PPO sample, as in the original
# objective, and its gradient weight does not depend on its response's length (sequence_mean's
# 1/|response| favours short responses when A > 0 and long ones when A < 0). Both are offered;
# the platform makes a spec name its choice.
DEFAULT_REDUCTION: Reduction = "token_mean"


@dataclass(frozen=True)
class UpdateSettings:
    """Typed settings of one update (SB3-style names where SB3 has them)."""

    epochs: int = 4
    minibatch_size: int = 8  # sequences per minibatch
    clip_epsilon: float = 0.2  # the clip range's low side (and its high side, unless set)
    clip_epsilon_high: float | None = None  # Clip-Higher: 1 + this bounds the ratio above
    objective: Objective = "ppo"
    value_coef: float = 0.5
    entropy_coef: float = 0.0
    max_grad_norm: float = 0.5
    reduction: Reduction = DEFAULT_REDUCTION
    value_clip: float | None = 0.2
    normalize_advantage: bool = True
    advantage_scope: AdvantageScope = "batch"
    target_kl: float | None = None  # stop the epochs once an epoch's KL passes 1.5 x target

    def __post_init__(self) -> None:
        if not (isinstance(self.epochs, int) and self.epochs >= 1):
            raise LMTrainerError(f"epochs must be an integer >= 1, got {self.epochs!r}")
        if not (isinstance(self.minibatch_size, int) and self.minibatch_size >= 1):
            raise LMTrainerError(f"minibatch_size must be >= 1, got {self.minibatch_size!r}")
        if self.objective not in OBJECTIVES:
            raise LMTrainerError(f"objective must be one of {OBJECTIVES}, got {self.objective!r}")
        _ = self.clip  # a ClipRange refuses bounds outside (0, 1) and high < low
        if self.advantage_scope not in ("batch", "minibatch"):
            raise LMTrainerError(
                f"advantage_scope must be 'batch' or 'minibatch', got {self.advantage_scope!r}"
            )

    @property
    def clip(self) -> ClipRange:
        high = self.clip_epsilon if self.clip_epsilon_high is None else self.clip_epsilon_high
        return ClipRange(self.clip_epsilon, high)


@dataclass(frozen=True)
class MinibatchLoss:
    """The minibatch's loss terms and the weight its reduction gives it within the batch."""

    total: Tensor
    policy: PolicyLossOutput
    value: Tensor | None  # None without a critic
    entropy: Tensor
    weight: Tensor  # valid tokens (token_mean) or sequences with tokens (sequence_mean)
    kl: Tensor | None = None  # the KL-to-reference loss term (kl placement `loss`), detached


def _masked_mean(values: Tensor, mask: Tensor, reduction: Reduction) -> Tensor:
    values = torch.where(mask, values, 0.0)
    weights = mask.to(values.dtype)
    if reduction == "token_mean":
        return values.sum() / weights.sum().clamp(min=1.0)
    counts = weights.sum(1)
    has = (counts > 0).to(values.dtype)
    return ((values.sum(1) / counts.clamp(min=1.0)) * has).sum() / has.sum().clamp(min=1.0)


def minibatch_loss(
    terms: TokenTerms, batch: RolloutBatch, index: Tensor, settings: UpdateSettings
) -> MinibatchLoss:
    """The objective's loss of the sequences `index` given the current policy's `terms`."""
    mask = batch.action_mask[index]
    advantages = batch.advantages[index]
    if settings.normalize_advantage and settings.advantage_scope == "minibatch":
        advantages = normalize(advantages, mask)
    # A positive per-token weight times A is that token's loss times the weight (PPO-Clip,
    # CISPO; GSPO averages the weighted advantages over the response).
    advantages = advantages * batch.is_weights[index]
    policy = policy_objective(
        settings.objective,
        terms.log_probs,
        batch.old_log_probs[index],
        advantages,
        mask,
        settings.clip,
        settings.reduction,
    )
    entropy = _masked_mean(terms.entropy, mask, settings.reduction)
    value = None
    if batch.critic:
        value = _value_loss(terms, batch, index, settings)
        total = policy.loss + settings.value_coef * value - settings.entropy_coef * entropy
        value = value.detach()
    else:  # no critic: nothing to fit
        total = policy.loss - settings.entropy_coef * entropy
    kl = None
    if batch.loss_kl_beta > 0:
        kl = loss_kl(terms, batch, index, settings.reduction)
        total = total + batch.loss_kl_beta * kl
        kl = kl.detach()
    weight = mask.sum() if settings.reduction == "token_mean" else (mask.sum(1) > 0).sum()
    return MinibatchLoss(total, policy, value, entropy.detach(), weight, kl)


def loss_kl(terms: TokenTerms, batch: RolloutBatch, index: Tensor, reduction: Reduction) -> Tensor:
    """The differentiable KL(pi_theta || pi_ref) estimate over the action tokens, reduced like
    the policy loss (kl placement `loss`: GRPO adds beta times this to its loss)."""
    mask = batch.action_mask[index]
    kl = kl_to_reference(terms.log_probs, batch.ref_log_probs[index], batch.kl_estimator)
    return _masked_mean(kl, mask, reduction)


def _value_loss(
    terms: TokenTerms, batch: RolloutBatch, index: Tensor, settings: UpdateSettings
) -> Tensor:
    """0.5 * (V - R)^2 over the action tokens, pessimistically clipped around the old values."""
    mask = batch.action_mask[index]
    returns, old_values = batch.returns[index], batch.values[index]
    value_error = (terms.values - returns) ** 2
    if settings.value_clip is not None:
        clipped = old_values + (terms.values - old_values).clamp(
            -settings.value_clip, settings.value_clip
        )
        value_error = torch.maximum(value_error, (clipped - returns) ** 2)
    return 0.5 * _masked_mean(value_error, mask, settings.reduction)


def shuffled_minibatches(
    size: int, minibatch_size: int, generator: torch.Generator
) -> list[Tensor]:
    """One epoch's minibatches: a fresh permutation of the sequences, cut in order."""
    order = torch.randperm(size, generator=generator)
    return [order[i : i + minibatch_size] for i in range(0, size, minibatch_size)]
