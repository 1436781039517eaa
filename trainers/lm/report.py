"""Rollout-level metrics of the language-model trainer, overall and per task slice."""

from __future__ import annotations

import torch
from torch import Tensor

from ppo_platform.trainers.losses import explained_variance, return_spread

from .advantages import KLEstimator, kl_to_reference
from .batch import RolloutBatch


def sequence_kl(batch: RolloutBatch, estimator: KLEstimator) -> Tensor:
    """Per sequence, the summed per-token KL(pi_old || pi_ref) estimate over its response."""
    kl = kl_to_reference(batch.old_log_probs, batch.ref_log_probs, estimator)
    return torch.where(batch.action_mask, kl, 0.0).sum(1)


def rollout_metrics(
    batch: RolloutBatch, estimator: KLEstimator, beta: float, has_reference: bool = True
) -> dict[str, float]:
    """lm/reward_mean, lm/kl_ref, lm/response_length (and `/<task>` each), critic fit (when
    there is a critic)."""
    kl = sequence_kl(batch, estimator)
    lengths = batch.response_lengths.double()
    per_sequence = {
        "lm/reward_mean": batch.scores.double(),
        "lm/response_length": lengths,
    }
    if has_reference:  # without one there is no KL to report (not a KL of 0)
        per_sequence["lm/kl_ref"] = kl.double()
    metrics = {name: float(values.mean()) for name, values in per_sequence.items()}
    metrics["lm/reward_std"] = float(batch.scores.double().std(correction=0))
    if has_reference:
        metrics["lm/kl_ref_per_token"] = float(kl.sum() / lengths.sum().clamp(min=1))
        if batch.loss_kl_beta == 0:  # the KL is in the reward (the loss reports train/kl_loss)
            metrics["lm/kl_penalty_mean"] = float(-beta * kl.double().mean())
        metrics["lm/kl_beta"] = float(beta)
    names, index = batch.task_index()
    for i, name in enumerate(names):
        rows = index == i
        for metric, values in per_sequence.items():
            metrics[f"{metric}/{name}"] = float(values[rows].mean())
    if batch.critic:  # without one nothing predicts the returns: no fit to report
        mask = batch.action_mask
        returns = batch.returns[mask]
        ev = explained_variance(batch.values[mask], returns)
        metrics["train/explained_variance"] = float(ev)
        std, rms = return_spread(returns)
        metrics["train/returns_std"], metrics["train/returns_rms"] = float(std), float(rms)
    metrics.update(batch.extra)
    return metrics
