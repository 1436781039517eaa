"""ppo_platform.trainers.fast.distributions: SB3's evaluate_actions bit for bit, values and
gradients."""

from __future__ import annotations

import pytest
import torch
from gymnasium import spaces
from stable_baselines3 import PPO

from ppo_platform.trainers.fast.distributions import evaluate_actions
from tests.trainers_tests.trainer_rollouts import with_rollout

ENVS = {"categorical": "CartPole-v1", "gaussian": "Pendulum-v1"}


def batch(model: PPO) -> tuple[torch.Tensor, torch.Tensor]:
    sample = next(iter(model.rollout_buffer.get(64)))
    actions = sample.actions
    if isinstance(model.action_space, spaces.Discrete):
        actions = actions.long().flatten()
    return sample.observations, actions


@pytest.mark.parametrize("kind", list(ENVS))
def test_evaluate_actions_is_sb3s_bit_for_bit_values_and_gradients(kind: str) -> None:
    model = with_rollout(PPO, ENVS[kind], seed=1, n_steps=64)
    observations, actions = batch(model)
    results = []
    ours = lambda o, a: evaluate_actions(model.policy, o, a)  # noqa: E731
    for evaluate in (model.policy.evaluate_actions, ours):
        model.policy.zero_grad(set_to_none=True)
        values, log_prob, entropy = evaluate(observations, actions)
        assert entropy is not None
        (values.sum() + log_prob.sum() + entropy.sum()).backward()
        grads = [p.grad.clone() for p in model.policy.parameters()]  # type: ignore[union-attr]
        results.append((values.detach(), log_prob.detach(), entropy.detach(), grads))
    (v1, l1, e1, g1), (v2, l2, e2, g2) = results
    assert torch.equal(v1, v2) and torch.equal(l1, l2) and torch.equal(e1, e2)
    assert all(torch.equal(a, b) for a, b in zip(g1, g2, strict=True))
