"""The LM training contract's six verifications (docs/guides/language-models.md), run
against the language-model trainer itself.

1. ratio 1 when new == old log-probs; 2. a positive advantage raises the action's probability,
a negative one lowers it; 3. prompt and padding log-probs do not change the loss; 4. both sides
of the clip range; 5. reshuffled minibatches give the same one-epoch full-batch reduction;
6. KL, clip fraction, length and reward reported per task slice.
"""

from __future__ import annotations

import math

import pytest
import torch

from ppo_platform.trainers.lm.rewards import build_reward
from ppo_platform.trainers.lm.update import UpdateSettings, minibatch_loss

CONTAINS_ONE = build_reward("contains", {"text": "1"})


def action_log_prob_sums(trainer, batch):
    with torch.no_grad():
        terms = trainer.policy(batch.input_ids, batch.attention_mask)
    return torch.where(batch.action_mask, terms.log_probs, 0.0).sum(1)


def test_ratio_is_one_when_new_and_old_log_probs_are_equal(make_trainer, prompts):
    trainer = make_trainer(reward=CONTAINS_ONE, update=UpdateSettings(epochs=1, minibatch_size=8))
    metrics = trainer.step(prompts)
    # One epoch, one minibatch: every ratio is taken before the first optimizer step.
    for name in ("min", "p01", "p50", "p99", "max"):
        assert metrics[f"train/ratio_{name}"] == pytest.approx(1.0, abs=1e-6)
    assert metrics["train/clip_fraction"] == 0.0
    assert metrics["train/approx_kl"] == pytest.approx(0.0, abs=1e-10)


def test_ratio_is_exactly_one_in_the_loss_when_log_probs_match(make_trainer, prompts):
    trainer = make_trainer(reward=CONTAINS_ONE)
    batch = trainer.collect(prompts)
    index = torch.arange(batch.size)
    terms = trainer.policy(batch.input_ids, batch.attention_mask)
    loss = minibatch_loss(
        terms, batch.with_(old_log_probs=terms.log_probs.detach()), index, UpdateSettings()
    )
    assert torch.equal(loss.policy.ratio, torch.ones_like(loss.policy.ratio))


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_advantage_sign_moves_the_action_probability(make_trainer, prompts, sign):
    settings = UpdateSettings(epochs=1, minibatch_size=8, value_coef=0.0, normalize_advantage=False)
    trainer = make_trainer(reward=CONTAINS_ONE, update=settings, learning_rate=1e-3)
    batch = trainer.collect(prompts)
    advantages = torch.where(batch.action_mask, sign, 0.0)
    before = action_log_prob_sums(trainer, batch)
    trainer.update(batch.with_(advantages=advantages))
    after = action_log_prob_sums(trainer, batch)
    moved = (after - before) * sign
    assert bool((moved > 0).all()), f"log-probs moved against the advantage: {moved.tolist()}"


def test_one_sequence_with_positive_advantage_gains_probability(make_trainer, prompts):
    settings = UpdateSettings(epochs=1, minibatch_size=8, value_coef=0.0, normalize_advantage=False)
    trainer = make_trainer(reward=CONTAINS_ONE, update=settings, learning_rate=1e-3)
    batch = trainer.collect(prompts)
    advantages = torch.zeros_like(batch.advantages)
    advantages[2] = torch.where(batch.action_mask[2], 1.0, 0.0)
    before = action_log_prob_sums(trainer, batch)
    trainer.update(batch.with_(advantages=advantages))
    assert action_log_prob_sums(trainer, batch)[2] > before[2]


def test_prompt_and_padding_entries_do_not_change_the_loss(make_trainer, prompts):
    trainer = make_trainer(reward=CONTAINS_ONE)
    batch = trainer.collect(prompts)
    index = torch.arange(batch.size)
    outside = ~batch.action_mask
    assert outside[:, : batch.input_ids.shape[1] // 2].any() and (batch.attention_mask == 0).any()
    garbage = {
        name: torch.where(
            outside, torch.full_like(getattr(batch, name), math.nan), getattr(batch, name)
        )
        for name in ("old_log_probs", "behavior_log_probs", "advantages", "returns", "values")
    }
    # Padding token ids are arbitrary: change them all (attention never sees them).
    pad = batch.attention_mask == 0
    ids = torch.where(pad, (batch.input_ids + 3) % len(trainer.tokenizer), batch.input_ids)
    settings = UpdateSettings()

    def loss_of(b):
        terms = trainer.policy(b.input_ids, b.attention_mask)
        return minibatch_loss(terms, b, index, settings)

    reference = loss_of(batch)
    perturbed = loss_of(batch.with_(input_ids=ids, **garbage))
    torch.testing.assert_close(perturbed.total, reference.total, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(perturbed.policy.loss, reference.policy.loss, rtol=1e-5, atol=1e-6)
    assert math.isfinite(float(perturbed.total.detach()))


@pytest.mark.parametrize("reduction", ["token_mean", "sequence_mean"])
def test_both_sides_of_the_clip_range(make_trainer, prompts, reduction):
    """Rows: A>0 r=1.5 (flat), A>0 r=0.5 (still raised), A<0 r=0.5 (flat), A<0 r=1.5 (lowered)."""
    trainer = make_trainer(reward=CONTAINS_ONE)
    batch = trainer.collect(prompts[:4])
    index = torch.arange(4)
    terms = trainer.policy(batch.input_ids, batch.attention_mask)
    ratio = torch.tensor([1.5, 0.5, 0.5, 1.5])[:, None].expand_as(batch.old_log_probs)
    advantage = torch.tensor([1.0, 1.0, -1.0, -1.0])[:, None].expand_as(batch.old_log_probs)
    mask = batch.action_mask
    shifted = batch.with_(
        old_log_probs=terms.log_probs.detach() - ratio.log(),
        advantages=torch.where(mask, advantage, 0.0),
    )
    settings = UpdateSettings(normalize_advantage=False, reduction=reduction)
    loss = minibatch_loss(terms, shifted, index, settings)
    (grad,) = torch.autograd.grad(loss.policy.loss, terms.log_probs)
    assert float(loss.policy.clip_fraction) == 1.0
    counts = mask.sum(1, keepdim=True).float()
    weight = 1 / mask.sum() if reduction == "token_mean" else 1 / (4 * counts)
    expected = torch.where(mask, -advantage * ratio * weight, 0.0)
    expected[[0, 2]] = 0.0  # saturated: the objective gains nothing from moving further
    torch.testing.assert_close(grad, expected)
    assert bool((grad[1][mask[1]] < 0).all()) and bool((grad[3][mask[3]] > 0).all())


@pytest.mark.parametrize("reduction", ["token_mean", "sequence_mean"])
def test_reshuffled_minibatches_give_the_full_batch_reduction(make_trainer, prompts, reduction):
    settings = UpdateSettings(epochs=1, minibatch_size=3, reduction=reduction)
    trainer = make_trainer(reward=CONTAINS_ONE, update=settings, learning_rate=0.0)
    batch = trainer.collect(prompts)
    full = minibatch_loss(
        trainer.policy(batch.input_ids, batch.attention_mask), batch, torch.arange(8), settings
    )
    reported = []
    for seed in (1, 2, 3):
        trainer.generator.manual_seed(seed)
        reported.append(trainer.update(batch))
    for metrics in reported:
        assert metrics["train/policy_gradient_loss"] == pytest.approx(
            float(full.policy.loss), abs=1e-6
        )
        assert metrics["train/value_loss"] == pytest.approx(float(full.value), abs=1e-6)
        assert metrics["train/entropy"] == pytest.approx(float(full.entropy), abs=1e-6)


def test_kl_clip_fraction_length_and_reward_are_reported_per_slice(make_trainer, prompts):
    trainer = make_trainer(reward=CONTAINS_ONE, learning_rate=3e-2, kl_beta=0.1)
    trainer.step(prompts)  # move away from the reference so the KL is not 0
    metrics = trainer.step(prompts)
    batch = trainer.last_batch
    tasks = sorted(set(batch.tasks))
    assert tasks == ["carry", "single"]
    kl = torch.where(batch.action_mask, batch.old_log_probs - batch.ref_log_probs, 0.0).sum(1)
    tokens = {}
    for task in tasks:
        rows = torch.tensor([t == task for t in batch.tasks])
        tokens[task] = float(batch.action_mask[rows].sum())
        assert metrics[f"lm/reward_mean/{task}"] == pytest.approx(float(batch.scores[rows].mean()))
        assert metrics[f"lm/response_length/{task}"] == pytest.approx(
            float(batch.action_mask[rows].sum(1).double().mean())
        )
        assert metrics[f"lm/kl_ref/{task}"] == pytest.approx(float(kl[rows].mean()), abs=1e-6)
    assert metrics["lm/kl_ref"] != 0.0
    for name in ("train/clip_fraction", "train/approx_kl"):
        weighted = sum(metrics[f"{name}/{t}"] * tokens[t] for t in tasks) / sum(tokens.values())
        assert metrics[name] == pytest.approx(weighted, rel=1e-9)
    assert metrics["train/clip_fraction"] > 0.0
