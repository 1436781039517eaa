"""The KL to the reference: estimators k1, k2, k3, placed in the reward or in the loss."""

from __future__ import annotations

import pytest
import torch

from ppo_platform.trainers.lm.advantages import group_advantages, kl_to_reference
from ppo_platform.trainers.lm.rewards import build_reward
from ppo_platform.trainers.lm.rollout import RolloutSettings
from ppo_platform.trainers.lm.update import UpdateSettings, minibatch_loss

CONTAINS_ONE = build_reward("contains", {"text": "1"})


def test_k2_is_half_the_squared_log_ratio():
    logp = torch.log(torch.tensor([0.5, 0.2]))
    ref = torch.log(torch.tensor([0.25, 0.4]))
    expected = 0.5 * torch.log(torch.tensor([2.0, 0.5])) ** 2
    torch.testing.assert_close(kl_to_reference(logp, ref, "k2"), expected)


def moved_trainer(make_trainer, placement, estimator="k3"):
    """A GRPO trainer whose policy has left its reference (so the KL is not 0)."""
    rollout = RolloutSettings(
        estimator="grpo", group_size=4, kl_estimator=estimator, kl_placement=placement
    )
    trainer = make_trainer(
        reward=CONTAINS_ONE,
        rollout=rollout,
        kl_beta=0.5,
        kl_estimator=estimator,
        learning_rate=3e-2,
        update=UpdateSettings(epochs=1, minibatch_size=16),
    )
    return trainer


@pytest.mark.parametrize("placement", ["reward", "loss"])
def test_the_kl_lands_in_the_reward_or_in_the_loss_never_both(make_trainer, prompts, placement):
    trainer = moved_trainer(make_trainer, placement)
    trainer.step(prompts[:4])
    batch = trainer.collect(prompts[:4])
    kl = torch.where(
        batch.action_mask, kl_to_reference(batch.old_log_probs, batch.ref_log_probs, "k3"), 0.0
    ).sum(1)
    assert float(kl.abs().max()) > 1e-4  # the policy has moved
    returns = batch.scores - 0.5 * kl if placement == "reward" else batch.scores
    per_sequence = batch.advantages[torch.arange(batch.size), batch.action_mask.int().argmax(1)]
    torch.testing.assert_close(per_sequence, group_advantages(returns, 4, "grpo"))
    assert batch.loss_kl_beta == (0.5 if placement == "loss" else 0.0)


def test_the_loss_placement_adds_beta_times_the_current_kl(make_trainer, prompts):
    trainer = moved_trainer(make_trainer, "loss", estimator="k2")
    trainer.step(prompts[:4])
    batch = trainer.collect(prompts[:4])
    index = torch.arange(batch.size)
    settings = trainer.settings
    terms = trainer.policy(batch.input_ids, batch.attention_mask)
    with_kl = minibatch_loss(terms, batch, index, settings)
    without = minibatch_loss(terms, batch.with_(loss_kl_beta=0.0), index, settings)
    mask = batch.action_mask
    kl = 0.5 * (terms.log_probs - batch.ref_log_probs) ** 2
    expected = torch.where(mask, kl, 0.0).sum() / mask.sum()
    torch.testing.assert_close(with_kl.kl, expected.detach())
    torch.testing.assert_close(with_kl.total, without.total + 0.5 * expected)
    # Its gradient pulls the policy back toward the reference.
    (grad,) = torch.autograd.grad(with_kl.total - without.total, terms.log_probs)
    log_ratio = (terms.log_probs - batch.ref_log_probs).detach()
    assert bool((torch.sign(grad[mask]) == torch.sign(log_ratio[mask])).all())


def test_each_placement_reports_its_kl_term(make_trainer, prompts):
    in_loss = moved_trainer(make_trainer, "loss").step(prompts[:4])
    assert "train/kl_loss" in in_loss and "lm/kl_penalty_mean" not in in_loss
    assert in_loss["lm/kl_beta"] == 0.5
    in_reward = moved_trainer(make_trainer, "reward").step(prompts[:4])
    assert "lm/kl_penalty_mean" in in_reward and "train/kl_loss" not in in_reward


def test_beta_zero_adds_no_kl_term_but_still_measures_the_kl(make_trainer, prompts):
    rollout = RolloutSettings(estimator="rloo", group_size=2, kl_placement="loss")
    trainer = make_trainer(reward=CONTAINS_ONE, rollout=rollout, kl_beta=0.0)
    metrics = trainer.step(prompts[:4])
    assert "train/kl_loss" not in metrics and metrics["lm/kl_beta"] == 0.0
    assert "lm/kl_ref" in metrics
