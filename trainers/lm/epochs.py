"""K epochs of shuffled minibatch steps over one rollout, and the KL the update ended at."""

from __future__ import annotations

import torch
from torch import Tensor

from ppo_platform.trainers.losses import k3_kl

from .batch import RolloutBatch
from .policy import PolicyWithValueHead
from .statistics import UpdateStatistics
from .update import UpdateSettings, minibatch_loss, shuffled_minibatches

# SB3's early-stopping convention: stop once the KL passes 1.5 x target_kl.
TARGET_KL_FACTOR = 1.5


def run_update(
    policy: PolicyWithValueHead,
    optimizer: torch.optim.Optimizer,
    batch: RolloutBatch,
    settings: UpdateSettings,
    generator: torch.Generator,
) -> dict[str, float]:
    """The update: for each epoch a fresh permutation of the sequences, one step per minibatch."""
    names, slices = batch.task_index()
    stats = UpdateStatistics(names)
    parameters = [p for p in policy.parameters() if p.requires_grad]
    early_stop = None
    for epoch in range(1, settings.epochs + 1):
        stats.start_epoch()
        for index in shuffled_minibatches(batch.size, settings.minibatch_size, generator):
            terms = policy(batch.input_ids[index], batch.attention_mask[index])
            loss = minibatch_loss(terms, batch, index, settings)
            log_ratio = terms.log_probs - batch.old_log_probs[index]
            stats.add(loss, log_ratio, batch.action_mask[index], slices[index])
            optimizer.zero_grad()
            loss.total.backward()
            stats.grad_norms.append(
                torch.nn.utils.clip_grad_norm_(parameters, settings.max_grad_norm)
            )
            optimizer.step()
        epoch_kl = stats.epochs[-1].k3.sum() / stats.epochs[-1].tokens.sum()
        if settings.target_kl is not None and epoch_kl > TARGET_KL_FACTOR * settings.target_kl:
            early_stop = epoch
            break
    metrics = stats.read()
    metrics["train/approx_kl_post"] = float(post_update_kl(policy, batch))
    if early_stop is not None:
        metrics["train/early_stop_epoch"] = float(early_stop)
    return metrics


@torch.no_grad()
def post_update_kl(policy: PolicyWithValueHead, batch: RolloutBatch) -> Tensor:
    """k3 KL(pi_old || pi_now) over every action token of the rollout, after the update."""
    terms = policy(batch.input_ids, batch.attention_mask)
    mask = batch.action_mask
    return k3_kl(terms.log_probs[mask], batch.old_log_probs[mask])
