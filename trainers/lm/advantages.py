"""Per-token rewards (score on the last token, KL penalty to the reference on every token),
the advantage estimators (GAE over response tokens with a critic; the critic-free group
baselines GRPO and RLOO over responses to one prompt), and advantage normalization."""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

from .errors import LMTrainerError

KLEstimator = Literal["k1", "k2", "k3"]
AdvantageScope = Literal["batch", "minibatch"]
KLPlacement = Literal["reward", "loss"]
AdvantageEstimator = Literal["gae", "grpo", "rloo"]
KL_ESTIMATORS: tuple[str, ...] = ("k1", "k2", "k3")
ADVANTAGE_SCOPES: tuple[str, ...] = ("batch", "minibatch")
ADVANTAGE_ESTIMATORS: tuple[str, ...] = ("gae", "grpo", "rloo")
GROUP_ESTIMATORS: tuple[str, ...] = ("grpo", "rloo")  # critic-free: no value head
GROUP_STD_EPS = 1e-4  # GRPO's std guard: a group scoring alike gets A = 0, not 0/0


def kl_to_reference(log_probs: Tensor, ref_log_probs: Tensor, estimator: KLEstimator) -> Tensor:
    """Per-token estimate of KL(pi || pi_ref) at the sampled tokens.

    k1 = log pi - log pi_ref (unbiased, can be negative per token);
    k2 = 0.5 * (log pi - log pi_ref)^2 (biased, never negative; its gradient is the
    reverse-KL gradient's, as a loss term);
    k3 = (rho - 1) - log rho with rho = pi_ref / pi (unbiased, never negative).
    """
    if estimator == "k1":
        return log_probs - ref_log_probs
    if estimator == "k2":
        return 0.5 * (log_probs - ref_log_probs) ** 2
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


def group_advantages(
    returns: Tensor, group_size: int, estimator: AdvantageEstimator, scale_by_std: bool = True
) -> Tensor:
    """One advantage per response from the other responses to the same prompt, (B,).

    Rows come in consecutive groups of `group_size` responses to one prompt.
    grpo: A_i = (R_i - mean_g R) / (std_g R + GROUP_STD_EPS), std the sample std (n - 1);
          scale_by_std=False gives Dr. GRPO's A_i = R_i - mean_g R.
    rloo: A_i = R_i - mean_{j != i} R_j = G / (G - 1) * (R_i - mean_g R).
    """
    if estimator not in GROUP_ESTIMATORS:
        raise LMTrainerError(f"estimator must be one of {GROUP_ESTIMATORS}, got {estimator!r}")
    if not (isinstance(group_size, int) and group_size >= 2):
        raise LMTrainerError(
            f"{estimator} needs group_size >= 2 responses per prompt, got {group_size!r}"
        )
    if returns.ndim != 1 or returns.numel() % group_size:
        raise LMTrainerError(
            f"returns of shape {tuple(returns.shape)} do not split into groups of {group_size}"
        )
    groups = returns.reshape(-1, group_size)
    centred = groups - groups.mean(1, keepdim=True)
    if estimator == "rloo":
        return (centred * group_size / (group_size - 1)).reshape(-1)
    if scale_by_std:
        centred = centred / (groups.std(1, keepdim=True) + GROUP_STD_EPS)
    return centred.reshape(-1)


def zero_spread_fraction(returns: Tensor, group_size: int) -> float:
    """Share of groups whose responses all score alike (their group advantage is 0)."""
    groups = returns.reshape(-1, group_size)
    return float((groups.max(1).values - groups.min(1).values == 0).double().mean())
