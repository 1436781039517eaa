"""The policy objectives of the language-model trainer, each a named loss over action tokens.

r_t = exp(log pi(a_t) - log pi_old(a_t)) per token; the clip range is [1 - low, 1 + high]
(low = high: symmetric PPO; high > low: Clip-Higher). Every loss returns a PolicyLossOutput
whose ratio and clip fraction are what that objective clips (a token's ratio, or GSPO's
sequence ratio), reduced with the named reduction (token_mean or sequence_mean).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

from ppo_platform.trainers.losses import (
    PolicyLossOutput,
    Reduction,
    clipped_policy_loss,
    prepare_masked_terms,
    reduce_masked,
)

from .errors import LMTrainerError

Objective = Literal["ppo", "gspo", "cispo"]
OBJECTIVES: tuple[str, ...] = ("ppo", "gspo", "cispo")


@dataclass(frozen=True)
class ClipRange:
    """The ratio's allowed interval [1 - low, 1 + high]; both bounds in (0, 1)."""

    low: float = 0.2
    high: float = 0.2

    def __post_init__(self) -> None:
        for name, value in (("low", self.low), ("high", self.high)):
            if not (isinstance(value, (int, float)) and 0.0 < value < 1.0):
                raise LMTrainerError(f"clip {name} must be in (0, 1), got {value!r}")
        if self.high < self.low:
            raise LMTrainerError(
                f"clip high {self.high} is below clip low {self.low}; Clip-Higher raises high"
            )

    @property
    def symmetric(self) -> bool:
        return self.low == self.high


def _output(
    loss: Tensor, log_ratio: Tensor, ratio: Tensor, valid: Tensor, clip: ClipRange
) -> PolicyLossOutput:
    high = None if clip.symmetric else clip.high
    return PolicyLossOutput(loss, log_ratio.detach(), ratio.detach(), valid, clip.low, high)


def ppo_clip_loss(
    new_logp: Tensor,
    old_logp: Tensor,
    advantages: Tensor,
    mask: Tensor,
    clip: ClipRange,
    reduction: Reduction,
) -> PolicyLossOutput:
    """PPO-Clip per token, l_t = -min(r_t A_t, clip(r_t, 1 - low, 1 + high) A_t):

    A_t >= 0: l_t = -A_t min(r_t, 1 + high)  (no gradient once r_t > 1 + high);
    A_t < 0:  l_t = -A_t max(r_t, 1 - low)   (no gradient once r_t < 1 - low).
    """
    return clipped_policy_loss(
        new_logp,
        old_logp,
        advantages,
        mask,
        clip_epsilon=clip.low,
        reduction=reduction,
        clip_epsilon_high=None if clip.symmetric else clip.high,
    )


def gspo_loss(
    new_logp: Tensor,
    old_logp: Tensor,
    advantages: Tensor,
    mask: Tensor,
    clip: ClipRange,
    reduction: Reduction,
) -> PolicyLossOutput:
    """GSPO: one length-normalised ratio per sequence, clipped per sequence.

    s_i = exp((1/|y_i|) sum_t (log pi - log pi_old)), A_i = the mean of the response's token
    advantages (the group advantage itself with grpo / rloo), and every token of response i
    carries l_i = -min(s_i A_i, clip(s_i, 1 - low, 1 + high) A_i):
    A_i >= 0: l_i = -A_i min(s_i, 1 + high);  A_i < 0: l_i = -A_i max(s_i, 1 - low).
    Unclipped, d l_i / d log pi(a_t) = -A_i s_i / |y_i|: every token of the response moves by
    the same weight; a clipped sequence gives none of its tokens a gradient.
    """
    log_ratio, adv, valid = prepare_masked_terms(
        new_logp, old_logp, advantages, mask, "sequence_mean", True
    )
    assert valid is not None  # a mask was given
    counts = valid.sum(1, keepdim=True).clamp(min=1).to(log_ratio.dtype)
    sequence_log_ratio = log_ratio.sum(1, keepdim=True) / counts
    sequence_advantage = adv.sum(1, keepdim=True) / counts
    ratio = sequence_log_ratio.exp()
    clipped = ratio.clamp(1.0 - clip.low, 1.0 + clip.high) * sequence_advantage
    per_sequence = -torch.minimum(ratio * sequence_advantage, clipped)
    token_loss = torch.where(valid, per_sequence.expand_as(log_ratio), 0.0)
    loss = reduce_masked(token_loss, valid, reduction)
    broadcast_log_ratio = torch.where(valid, sequence_log_ratio.expand_as(log_ratio), 0.0)
    return _output(loss, broadcast_log_ratio, broadcast_log_ratio.exp(), valid, clip)


def cispo_loss(
    new_logp: Tensor,
    old_logp: Tensor,
    advantages: Tensor,
    mask: Tensor,
    clip: ClipRange,
    reduction: Reduction,
) -> PolicyLossOutput:
    """CISPO: the clipped importance weight, stop-gradient, on the log-prob gradient.

    w_t = sg(clip(r_t, 1 - low, 1 + high)); l_t = -w_t A_t exp(log r_t - sg(log r_t)), whose
    value is -w_t A_t and whose gradient is that of -w_t A_t log pi(a_t):
    d l_t / d log pi(a_t) = -w_t A_t for every r_t. Clipping bounds the weight and never
    drops a token's gradient (PPO-Clip drops it outside the range).
    """
    log_ratio, adv, valid = prepare_masked_terms(
        new_logp, old_logp, advantages, mask, reduction, True
    )
    assert valid is not None
    ratio = log_ratio.exp()
    weight = ratio.detach().clamp(1.0 - clip.low, 1.0 + clip.high)
    token_loss = -weight * adv * torch.exp(log_ratio - log_ratio.detach())
    loss = reduce_masked(torch.where(valid, token_loss, 0.0), valid, reduction)
    return _output(loss, log_ratio, ratio, valid, clip)


_LOSSES = {"ppo": ppo_clip_loss, "gspo": gspo_loss, "cispo": cispo_loss}


def policy_objective(
    objective: Objective,
    new_logp: Tensor,
    old_logp: Tensor,
    advantages: Tensor,
    mask: Tensor,
    clip: ClipRange,
    reduction: Reduction,
) -> PolicyLossOutput:
    """The named objective's loss over the masked action tokens."""
    if objective not in _LOSSES:
        raise LMTrainerError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    return _LOSSES[objective](new_logp, old_logp, advantages, mask, clip, reduction)
