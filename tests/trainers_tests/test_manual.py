"""trainers.manual: the minibatch loss's gradients by hand equal autograd's bit for bit, and
only policies it covers exactly take that path."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.policies import ActorCriticPolicy
from torch import nn
from torch.nn import functional as F

from trainers.lean import evaluate_actions
from trainers.losses import clipped_policy_loss
from trainers.manual import ManualLoss
from trainers.ppo import MonitoredPPO
from trainers.ppo_kl import MonitoredKLPPO

BATCH = 64


def policy(activation: type[nn.Module] = nn.Tanh, actions: int = 3) -> ActorCriticPolicy:
    torch.manual_seed(0)
    box = gym.spaces.Box(-1, 1, (5,), np.float32)
    return ActorCriticPolicy(
        box, gym.spaces.Discrete(actions), lambda _: 1e-3, net_arch=[16, 16],
        activation_fn=activation,
    )  # fmt: skip


def minibatch(pi: ActorCriticPolicy) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    obs = torch.randn(BATCH, 5, generator=generator)
    actions = torch.randint(0, 3, (BATCH, 1), generator=generator).float()
    with torch.no_grad():
        values, log_prob, _ = pi.evaluate_actions(obs, actions.long().flatten())
    advantages = torch.randn(BATCH, generator=generator)
    return {
        "observations": obs,
        "actions": actions,
        "old_log_prob": log_prob + 0.3 * torch.randn(BATCH, generator=generator),
        "advantages": (advantages - advantages.mean()) / (advantages.std() + 1e-8),
        "old_values": values.flatten() + 0.1 * torch.randn(BATCH, generator=generator),
        "returns": torch.randn(BATCH, generator=generator),
    }


def autograd_loss(pi: ActorCriticPolicy, batch: dict, coefficients: tuple) -> torch.Tensor:
    """ClipPPO._minibatch's autograd path."""
    clip_epsilon, ent_coef, vf_coef, clip_range_vf = coefficients
    values, log_prob, entropy = evaluate_actions(
        pi, batch["observations"], batch["actions"].long().flatten()
    )
    values = values.flatten()
    out = clipped_policy_loss(
        log_prob, batch["old_log_prob"], batch["advantages"], clip_epsilon=clip_epsilon,
        validate=False,
    )  # fmt: skip
    if clip_range_vf is not None:
        old = batch["old_values"]
        values = old + torch.clamp(values - old, -clip_range_vf, clip_range_vf)
    assert entropy is not None
    value_loss = F.mse_loss(batch["returns"], values)
    return out.loss + ent_coef * -torch.mean(entropy) + vf_coef * value_loss


@pytest.mark.parametrize("activation", [nn.Tanh, nn.ReLU])
@pytest.mark.parametrize("ent_coef", [0.0, 0.01])
@pytest.mark.parametrize("clip_range_vf", [None, 0.05])
def test_gradients_equal_autograd_bit_for_bit(
    activation: type[nn.Module], ent_coef: float, clip_range_vf: float | None
) -> None:
    pi = policy(activation)
    manual = ManualLoss.build(pi)
    assert manual is not None
    batch = minibatch(pi)
    coefficients = (0.1, ent_coef, 0.5, clip_range_vf)
    ours = manual(**batch, coefficients=coefficients)
    loss = autograd_loss(pi, batch, coefficients)
    loss.backward()
    assert torch.equal(ours.loss, loss)
    assert 0 < ours.policy.clip_fraction < 1  # both branches of the clip are exercised
    for parameter, grad in zip(pi.parameters(), ours.grads, strict=True):
        assert parameter.grad is not None
        assert torch.equal(grad, parameter.grad)
        assert grad.abs().sum() > 0


def test_log_prob_is_the_distributions() -> None:
    pi = policy()
    manual = ManualLoss.build(pi)
    assert manual is not None
    batch = minibatch(pi)
    with torch.no_grad():
        expected = pi.get_distribution(batch["observations"]).log_prob(
            batch["actions"].long().flatten()
        )
    assert torch.equal(manual.log_prob(batch["observations"], batch["actions"]), expected)


class Subclassed(ActorCriticPolicy):
    pass


def test_only_policies_it_covers_take_the_manual_path() -> None:
    assert ManualLoss.build(policy()) is not None
    assert ManualLoss.build(policy(nn.ELU)) is None  # an activation it does not differentiate
    box = gym.spaces.Box(-1, 1, (5,), np.float32)
    gaussian = ActorCriticPolicy(box, gym.spaces.Box(-1, 1, (2,), np.float32), lambda _: 1e-3)
    assert ManualLoss.build(gaussian) is None
    assert ManualLoss.build(Subclassed(box, gym.spaces.Discrete(2), lambda _: 1e-3)) is None
    env = make_vec_env("CartPole-v1", n_envs=1, seed=0)
    assert MonitoredPPO("MlpPolicy", env, device="cpu")._manual_loss() is not None
    # another objective keeps autograd
    assert MonitoredKLPPO("MlpPolicy", env, device="cpu")._manual_loss() is None
    assert isinstance(MonitoredPPO("MlpPolicy", env, device="cpu"), PPO)
