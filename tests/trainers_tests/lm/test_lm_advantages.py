"""Token rewards, GAE over response tokens and the KL estimators."""

from __future__ import annotations

import pytest
import torch

from ppo_platform.trainers.lm.advantages import (
    kl_to_reference,
    masked_gae,
    normalize,
    token_rewards,
)
from ppo_platform.trainers.lm.errors import LMTrainerError

# Two rows, prompt in columns 0-1; row 0 answers in columns 2-4, row 1 in columns 2-3.
MASK = torch.tensor([[0, 0, 1, 1, 1], [0, 0, 1, 1, 0]], dtype=torch.bool)
TERMINAL = torch.tensor([[0, 0, 0, 0, 1], [0, 0, 0, 1, 0]], dtype=torch.bool)


def test_score_lands_on_the_last_token_and_kl_on_every_action():
    kl = torch.full((2, 5), 0.5)
    rewards = token_rewards(torch.tensor([1.0, 2.0]), kl, MASK, TERMINAL, beta=0.1)
    expected = torch.tensor([[0, 0, -0.05, -0.05, 0.95], [0, 0, -0.05, 1.95, 0]])
    torch.testing.assert_close(rewards, expected)


def test_gae_matches_a_hand_computation_over_response_tokens():
    rewards = torch.tensor([[9.0, 9.0, 0.0, 0.0, 1.0], [9.0, 9.0, 0.5, 2.0, 9.0]])
    values = torch.tensor([[7.0, 7.0, 0.2, 0.4, 0.6], [7.0, 7.0, 0.1, 0.3, 7.0]])
    gamma, lam = 0.9, 0.8
    advantages, returns = masked_gae(rewards, values, MASK, gamma, lam)
    d = {
        (0, 4): 1.0 - 0.6,
        (0, 3): 0.0 + gamma * 0.6 - 0.4,
        (0, 2): 0.0 + gamma * 0.4 - 0.2,
        (1, 3): 2.0 - 0.3,
        (1, 2): 0.5 + gamma * 0.3 - 0.1,
    }
    expected = torch.zeros(2, 5)
    expected[0, 4] = d[0, 4]
    expected[0, 3] = d[0, 3] + gamma * lam * expected[0, 4]
    expected[0, 2] = d[0, 2] + gamma * lam * expected[0, 3]
    expected[1, 3] = d[1, 3]
    expected[1, 2] = d[1, 2] + gamma * lam * expected[1, 3]
    torch.testing.assert_close(advantages, expected)
    torch.testing.assert_close(returns, torch.where(MASK, expected + values, 0.0))


def test_gamma_and_lambda_one_give_reward_to_go_minus_value():
    rewards = torch.tensor([[0.0, 0.0, 0.1, 0.2, 1.0], [0.0, 0.0, 0.0, 3.0, 0.0]])
    values = torch.zeros(2, 5)
    advantages, _ = masked_gae(rewards, values, MASK, 1.0, 1.0)
    torch.testing.assert_close(advantages[0, 2:], torch.tensor([1.3, 1.2, 1.0]))
    torch.testing.assert_close(advantages[1, 2:4], torch.tensor([3.0, 3.0]))


def test_k1_and_k3_estimators():
    logp = torch.log(torch.tensor([0.5, 0.2]))
    ref = torch.log(torch.tensor([0.25, 0.4]))
    torch.testing.assert_close(kl_to_reference(logp, ref, "k1"), logp - ref)
    rho = torch.tensor([0.5, 2.0])
    torch.testing.assert_close(kl_to_reference(logp, ref, "k3"), (rho - 1) - rho.log())
    assert bool((kl_to_reference(logp, ref, "k3") >= 0).all())
    with pytest.raises(LMTrainerError, match="kl_estimator"):
        kl_to_reference(logp, ref, "k4")  # type: ignore[arg-type]


def test_normalization_uses_action_tokens_only():
    advantages = torch.tensor([[100.0, 100.0, 1.0, 2.0, 3.0], [-50.0, 0.0, 4.0, 5.0, 99.0]])
    out = normalize(advantages, MASK)
    selected = out[MASK]
    assert selected.mean().abs() < 1e-6 and (selected.std() - 1).abs() < 1e-5
    assert bool((out[~MASK] == 0).all())
