"""The critic-free advantage estimators: GRPO (with and without the std division) and RLOO,
over groups of responses to one prompt; no value head is built, trained or saved."""

from __future__ import annotations

import pytest
import torch

from ppo_platform.trainers.lm.advantages import group_advantages, zero_spread_fraction
from ppo_platform.trainers.lm.errors import LMTrainerError
from ppo_platform.trainers.lm.rewards import build_reward
from ppo_platform.trainers.lm.rollout import RolloutSettings
from ppo_platform.trainers.lm.update import UpdateSettings

CONTAINS_ONE = build_reward("contains", {"text": "1"})
# Two prompts, three responses each (consecutive rows).
RETURNS = torch.tensor([1.0, 0.0, 0.0, 2.0, 2.0, 5.0])


def test_grpo_divides_the_centred_return_by_the_group_sample_std():
    advantages = group_advantages(RETURNS, 3, "grpo")
    first = torch.tensor([1.0, 0.0, 0.0])
    second = torch.tensor([2.0, 2.0, 5.0])
    expected = torch.cat([(g - g.mean()) / (g.std(correction=1) + 1e-4) for g in (first, second)])
    torch.testing.assert_close(advantages, expected)
    torch.testing.assert_close(
        advantages[:3], torch.tensor([2 / 3, -1 / 3, -1 / 3]) / (torch.tensor(1 / 3).sqrt() + 1e-4)
    )


def test_dr_grpo_only_centres():
    advantages = group_advantages(RETURNS, 3, "grpo", scale_by_std=False)
    torch.testing.assert_close(advantages, torch.tensor([2 / 3, -1 / 3, -1 / 3, -1, -1, 2.0]))


def test_rloo_subtracts_the_mean_of_the_other_responses():
    advantages = group_advantages(RETURNS, 3, "rloo")
    others = torch.tensor([0.0, 0.5, 0.5, 3.5, 3.5, 2.0])
    torch.testing.assert_close(advantages, RETURNS - others)


def test_a_group_scoring_alike_gets_zero_advantage_and_is_counted():
    returns = torch.tensor([1.0, 1.0, 0.0, 1.0])
    for estimator in ("grpo", "rloo"):
        advantages = group_advantages(returns, 2, estimator)
        assert advantages[:2].tolist() == [0.0, 0.0]
    assert zero_spread_fraction(returns, 2) == 0.5


def test_groups_of_one_and_ragged_groups_are_refused():
    with pytest.raises(LMTrainerError, match="group_size >= 2"):
        group_advantages(RETURNS, 1, "grpo")
    with pytest.raises(LMTrainerError, match="groups of 4"):
        group_advantages(RETURNS, 4, "rloo")
    with pytest.raises(LMTrainerError, match="group_size >= 2"):
        RolloutSettings(estimator="grpo", group_size=1)


@pytest.mark.parametrize("estimator", ["grpo", "rloo"])
def test_a_group_rollout_samples_each_prompt_group_size_times(make_trainer, prompts, estimator):
    trainer = make_trainer(
        reward=CONTAINS_ONE, rollout=RolloutSettings(estimator=estimator, group_size=4)
    )
    batch = trainer.collect(prompts[:3])
    assert batch.size == 12 and batch.group_size == 4 and not batch.critic
    assert batch.prompts == tuple(p.prompt for p in prompts[:3] for _ in range(4))
    mask = batch.action_mask
    per_sequence = batch.advantages[torch.arange(12), mask.int().argmax(1)]
    # One advantage per response, on every one of its action tokens, 0 elsewhere.
    torch.testing.assert_close(batch.advantages, torch.where(mask, per_sequence[:, None], 0.0))
    # Before any update the policy is its reference: every KL term is 0, R_i is the score.
    torch.testing.assert_close(per_sequence, group_advantages(batch.scores, 4, estimator))
    assert per_sequence.reshape(3, 4).sum(1).abs().max() < 1e-5


@pytest.mark.parametrize("estimator", ["grpo", "rloo"])
def test_no_value_head_is_built_trained_reported_or_saved(
    make_trainer, prompts, estimator, tmp_path
):
    trainer = make_trainer(
        reward=CONTAINS_ONE,
        rollout=RolloutSettings(estimator=estimator, group_size=2),
        update=UpdateSettings(epochs=1, minibatch_size=8),
    )
    assert trainer.policy.value_head is None
    trained = {id(p) for group in trainer.optimizer.param_groups for p in group["params"]}
    assert trained == {id(p) for p in trainer.policy.lm.parameters()}
    metrics = trainer.step(prompts[:4])
    assert not {"train/value_loss", "train/explained_variance"} & set(metrics)
    assert 0.0 <= metrics["lm/group_zero_spread_fraction"] <= 1.0
    trainer.save(tmp_path / "model")
    assert (tmp_path / "model" / "model.safetensors").is_file()
    assert not (tmp_path / "model" / "value_head.pt").exists()


def test_gae_keeps_its_value_head_and_one_response_per_prompt(make_trainer, prompts):
    trainer = make_trainer(reward=CONTAINS_ONE)
    assert trainer.policy.value_head is not None
    batch = trainer.collect(prompts)
    assert batch.size == len(prompts) and batch.critic
    metrics = trainer.step(prompts)
    assert "train/value_loss" in metrics and "lm/group_zero_spread_fraction" not in metrics
