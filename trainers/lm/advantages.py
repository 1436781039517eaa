"""Per-token rewards (score on the last token, KL penalty to the reference on every token),
GAE over response tokens, and advantage normalization with a named scope."""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

from .errors import LMTrainerError

KLEstimator = Literal["k1", "k3"]
AdvantageScope = Literal["batch", "minibatch"]
KL_ESTIMATORS: tuple[str, ...] = ("k1", "k3")
ADVANTAGE_SCOPES: tuple[str, ...] = ("batch", "minibatch")


def kl_to_reference(log_probs: Tensor, ref_log_probs: Tensor, estimator: KLEstimator) -> Tensor:
    """Per-token estimate of KL(pi || pi_ref) at the sampled tokens.

    k1 = log pi - log pi_ref (unbiased, can be negative per token);
    k3 = (rho - 1) - log rho with rho = pi_ref / pi (unbiased, never negative).
    """
    if estimator == "k1":
        return log_probs - ref_log_probs
    if estimator == "k3":
        log_rho = ref_log_probs - log_probs
        return torch.expm1(log_rho) - log_rho
    raise LMTrainerError(f"kl_estimator must be one of {KL_ESTIMATORS}, got {estimator!r}")


def token_rewards(
    scores: Tensor, kl: Tensor, action_mask: Tensor, terminal_mask: Tensor, beta: float
) -> Tensor:
    """r_t = -beta * KL_t on every action token, plus the sequence's score on its last one."""
    rewards = torch.where(action_mask, -beta * kl, 0.0)
    return rewards + terminal_mask.to(rewards.dtype) * scores[:, None]


def masked_gae(
    rewards: Tensor, values: Tensor, action_mask: Tensor, gamma: float, gae_lambda: float
) -> tuple[Tensor, Tensor]:
    """GAE(lambda) advantages and returns over each row's action tokens (0 elsewhere).

    The episode ends after the last action token: no bootstrap beyond it. Action tokens of a
    row are contiguous (the response), so "next action" is simply the next column.
    """
    batch, length = rewards.shape
    advantages = torch.zeros_like(rewards)
    next_value = rewards.new_zeros(batch)
    running = rewards.new_zeros(batch)
    for t in reversed(range(length)):
        acting = action_mask[:, t]
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        running = torch.where(acting, delta + gamma * gae_lambda * running, 0.0)
        advantages[:, t] = running
        next_value = torch.where(acting, values[:, t], 0.0)
    returns = torch.where(action_mask, advantages + values, 0.0)
    return advantages, returns


def normalize(advantages: Tensor, mask: Tensor) -> Tensor:
    """(A - mean) / std over the masked-in entries; 0 elsewhere. A single entry is only centred."""
    selected = advantages[mask]
    if selected.numel() == 0:
        raise LMTrainerError("no action tokens to normalize advantages over")
    centred = advantages - selected.mean()
    if selected.numel() > 1:
        centred = centred / (selected.std() + 1e-8)
    return torch.where(mask, centred, 0.0)
