"""Truncated importance sampling of old-training over behavior log-probs (off-policy
correction where sampling and training differ)."""

from __future__ import annotations

import pytest
import torch

from ppo_platform.trainers.lm.errors import LMTrainerError
from ppo_platform.trainers.lm.rewards import build_reward
from ppo_platform.trainers.lm.rollout import RolloutSettings
from ppo_platform.trainers.lm.sampling import SamplingSettings
from ppo_platform.trainers.lm.update import UpdateSettings, minibatch_loss

CONTAINS_ONE = build_reward("contains", {"text": "1"})  # scores differ within a group
HOT = SamplingSettings(max_new_tokens=4, temperature=2.0)  # behavior differs from pi_old


def tis_trainer(make_trainer, cap):
    rollout = RolloutSettings(estimator="grpo", group_size=4, tis_cap=cap)
    return make_trainer(
        reward=CONTAINS_ONE,
        rollout=rollout,
        sampling=HOT,
        update=UpdateSettings(minibatch_size=16),
    )


def test_the_weights_are_the_old_over_behavior_ratio_truncated_at_the_cap(make_trainer, prompts):
    batch = tis_trainer(make_trainer, 1.05).collect(prompts[:4])
    mask = batch.action_mask
    ratio = torch.exp(batch.old_log_probs - batch.behavior_log_probs)[mask]
    torch.testing.assert_close(batch.tis_weights[mask], ratio.clamp(max=1.05))
    assert float(ratio.max()) > 1.05 and float(ratio.min()) < 1.0  # both sides occur
    expected = float((ratio > 1.05).float().mean())
    assert batch.extra["lm/tis_truncated_fraction"] == pytest.approx(expected)
    assert 0.0 < expected < 1.0
    assert bool((batch.tis_weights[~mask] == 1.0).all())


def test_a_cap_never_reached_truncates_nothing(make_trainer, prompts):
    batch = tis_trainer(make_trainer, 1e6).collect(prompts[:4])
    assert batch.extra["lm/tis_truncated_fraction"] == 0.0
    mask = batch.action_mask
    ratio = torch.exp(batch.old_log_probs - batch.behavior_log_probs)
    torch.testing.assert_close(batch.tis_weights[mask], ratio[mask])


def test_each_token_loss_is_weighted_by_its_truncated_ratio(make_trainer, prompts):
    trainer = tis_trainer(make_trainer, 1.05)
    batch = trainer.collect(prompts[:4])
    assert float(batch.advantages.abs().max()) > 0  # some group's scores differ
    index = torch.arange(batch.size)
    terms = trainer.policy(batch.input_ids, batch.attention_mask)
    weighted = minibatch_loss(terms, batch, index, trainer.settings)
    plain = minibatch_loss(terms, batch.with_(tis_weights=None), index, trainer.settings)
    # Before any step r = 1, so PPO-Clip's token loss is -A_t: weighted, -w_t A_t.
    mask = batch.action_mask
    expected = -(batch.advantages * batch.tis_weights)[mask].sum() / mask.sum()
    torch.testing.assert_close(weighted.policy.loss, expected)
    assert float((weighted.policy.loss - plain.policy.loss).abs()) > 1e-4


def test_tis_off_reports_no_truncation_metric(make_trainer, prompts):
    trainer = make_trainer(rollout=RolloutSettings(estimator="grpo", group_size=4), sampling=HOT)
    metrics = trainer.step(prompts[:2])
    assert "lm/tis_truncated_fraction" not in metrics
    assert trainer.last_batch is not None and trainer.last_batch.tis_weights is None
    on = tis_trainer(make_trainer, 1.5).step(prompts[:2])
    assert 0.0 <= on["lm/tis_truncated_fraction"] <= 1.0


def test_a_cap_below_one_is_refused():
    with pytest.raises(LMTrainerError, match="tis_cap must be >= 1"):
        RolloutSettings(tis_cap=0.5)
