"""Replaces SB3's `ActorCriticPolicy.evaluate_actions` in the PPO update, and switches off
torch.distributions' argument checks while the trainer's own rollout and update run.

- `evaluate_actions`: `policy.evaluate_actions` for categorical and diagonal Gaussian policies
  with the distribution's formulas inlined, no `torch.distributions` object built per minibatch:
  bit-equal values, log-probs, entropies and gradients. Anything else (gSDE, other
  distributions, a policy that overrides `evaluate_actions`) calls the policy's own.
- `distribution_checks_off`: torch.distributions' argument validation is a host sync per
  distribution built. Nothing is lost: a NaN that validation would have caught makes the
  update's metrics non-finite, and the trainer's `UpdateHooks` raise NonFiniteError for those once
  per update. torch keeps the default in one global flag, so it is off only inside the
  trainer's own call and restored on the way out.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from stable_baselines3.common.distributions import (
    CategoricalDistribution,
    DiagGaussianDistribution,
)
from stable_baselines3.common.policies import ActorCriticPolicy
from torch import Tensor

_HALF_LOG_2PI = math.log(math.sqrt(2 * math.pi))
_GAUSSIAN_ENTROPY = 0.5 + 0.5 * math.log(2 * math.pi)


@contextmanager
def distribution_checks_off() -> Iterator[None]:
    """Skip torch.distributions' argument validation for the duration of the block."""
    previous = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(False)
    try:
        yield
    finally:
        torch.distributions.Distribution.set_default_validate_args(previous)


def _inlined_distribution(policy: ActorCriticPolicy) -> bool:
    return (
        type(policy).evaluate_actions is ActorCriticPolicy.evaluate_actions
        and type(policy)._get_action_dist_from_latent
        is ActorCriticPolicy._get_action_dist_from_latent
        and policy.share_features_extractor
        and type(policy.action_dist) in (CategoricalDistribution, DiagGaussianDistribution)
    )


def evaluate_actions(
    policy: ActorCriticPolicy, observations: Any, actions: Tensor
) -> tuple[Tensor, Tensor, Tensor | None]:
    """`policy.evaluate_actions(observations, actions)`: values, log-probs and entropies, the
    same tensors bit for bit, without building a `torch.distributions` object."""
    if not isinstance(policy, ActorCriticPolicy) or not _inlined_distribution(policy):
        return policy.evaluate_actions(observations, actions)
    latent_pi, latent_vf = policy.mlp_extractor(policy.extract_features(observations))
    params = policy.action_net(latent_pi)
    if type(policy.action_dist) is CategoricalDistribution:
        # torch Categorical: normalized logits, log_prob by gather, entropy -sum(p log p).
        logits = params - params.logsumexp(dim=-1, keepdim=True)
        log_prob = logits.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)
        values = policy.value_net(latent_vf)
        clamped = torch.clamp(logits, min=torch.finfo(logits.dtype).min)
        entropy = -(clamped * torch.softmax(logits, dim=-1)).sum(-1)
        return values, log_prob, entropy
    # torch Normal with SB3's std = ones * exp(log_std), summed over the action dimensions.
    std = torch.ones_like(params) * policy.log_std.exp()
    log_prob = -((actions - params) ** 2) / (2 * std**2) - std.log() - _HALF_LOG_2PI
    values = policy.value_net(latent_vf)
    entropy = _GAUSSIAN_ENTROPY + torch.log(std)
    if log_prob.dim() > 1:  # SB3's sum_independent_dims
        return values, log_prob.sum(dim=1), entropy.sum(dim=1)
    return values, log_prob.sum(), entropy.sum()
