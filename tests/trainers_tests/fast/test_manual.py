"""ppo_platform.trainers.fast.manual: the minibatch loss's gradients by hand equal autograd's bit
for bit, for a
categorical and a Gaussian head, a training run by hand is stock SB3's, and only policies it
covers exactly take that path."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.vec_env import VecNormalize
from torch import nn
from torch.nn import functional as F

from ppo_platform.trainers.fast.distributions import evaluate_actions
from ppo_platform.trainers.fast.manual import ManualLoss
from ppo_platform.trainers.losses import clipped_policy_loss
from ppo_platform.trainers.ppo import PlatformPPO, kl_penalty_ppo

BATCH = 64


def policy(
    activation: type[nn.Module] = nn.Tanh, actions: int = 3, gaussian: bool = False
) -> ActorCriticPolicy:
    torch.manual_seed(0)
    box = gym.spaces.Box(-1, 1, (5,), np.float32)
    space: gym.Space = gym.spaces.Discrete(actions)
    if gaussian:
        space = gym.spaces.Box(-1, 1, (actions,), np.float32)
    pi = ActorCriticPolicy(box, space, lambda _: 1e-3, net_arch=[16, 16], activation_fn=activation)
    if gaussian:  # a log std per dimension, not all zero
        with torch.no_grad():
            pi.log_std.copy_(torch.linspace(-0.5, 0.3, actions))
    return pi


def as_evaluated(pi: ActorCriticPolicy, actions: torch.Tensor) -> torch.Tensor:
    """The actions as PlatformPPO._minibatch hands them to evaluate_actions."""
    gaussian = isinstance(pi.action_space, gym.spaces.Box)
    return actions if gaussian else actions.long().flatten()


def minibatch(pi: ActorCriticPolicy) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    obs = torch.randn(BATCH, 5, generator=generator)
    if isinstance(pi.action_space, gym.spaces.Box):
        actions = torch.randn(BATCH, pi.action_space.shape[0], generator=generator)
    else:
        actions = torch.randint(0, 3, (BATCH, 1), generator=generator).float()
    with torch.no_grad():
        values, log_prob, _ = pi.evaluate_actions(obs, as_evaluated(pi, actions))
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
    """PlatformPPO._minibatch's autograd path."""
    clip_epsilon, ent_coef, vf_coef, clip_range_vf = coefficients
    values, log_prob, entropy = evaluate_actions(
        pi, batch["observations"], as_evaluated(pi, batch["actions"])
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


@pytest.mark.parametrize("gaussian", [False, True], ids=["categorical", "gaussian"])
@pytest.mark.parametrize("activation", [nn.Tanh, nn.ReLU])
@pytest.mark.parametrize("ent_coef", [0.0, 0.01])
@pytest.mark.parametrize("clip_range_vf", [None, 0.05])
def test_gradients_equal_autograd_bit_for_bit(
    gaussian: bool, activation: type[nn.Module], ent_coef: float, clip_range_vf: float | None
) -> None:
    pi = policy(activation, gaussian=gaussian)
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


@pytest.mark.parametrize("gaussian", [False, True], ids=["categorical", "gaussian"])
def test_log_prob_is_the_distributions(gaussian: bool) -> None:
    pi = policy(gaussian=gaussian)
    manual = ManualLoss.build(pi)
    assert manual is not None
    batch = minibatch(pi)
    with torch.no_grad():
        expected = pi.get_distribution(batch["observations"]).log_prob(
            as_evaluated(pi, batch["actions"])
        )
    assert torch.equal(manual.log_prob(batch["observations"], batch["actions"]), expected)


@pytest.mark.parametrize("gaussian", [False, True], ids=["categorical", "gaussian"])
@pytest.mark.parametrize("deterministic", [False, True])
def test_forward_is_the_policys_with_the_same_random_draw(
    gaussian: bool, deterministic: bool
) -> None:
    pi = policy(gaussian=gaussian)
    manual = ManualLoss.build(pi)
    assert manual is not None
    obs = minibatch(pi)["observations"][:4]
    torch.manual_seed(7)
    with torch.no_grad():
        expected = pi(obs, deterministic=deterministic)
    next_draw = torch.rand(3)
    torch.manual_seed(7)
    ours = manual.forward(obs, deterministic=deterministic)
    for mine, theirs in zip(ours, expected, strict=True):
        assert torch.equal(mine, theirs)
    assert torch.equal(torch.rand(3), next_draw)  # as many random numbers drawn


def test_the_rollout_gaussian_follows_a_changed_log_std() -> None:
    """The std is computed once per rollout: a log std changed in place (an optimizer step)
    still gives the policy's own actions and log-probs on the next step."""
    pi = policy(gaussian=True)
    manual = ManualLoss.build(pi)
    assert manual is not None
    obs = minibatch(pi)["observations"][:4]
    for shift in (0.0, 0.5, 0.5):  # the same parameter twice: the cached terms are reused
        with torch.no_grad():
            pi.log_std.add_(shift)
        torch.manual_seed(11)
        with torch.no_grad():
            expected = pi(obs)
        torch.manual_seed(11)
        for mine, theirs in zip(manual.forward(obs), expected, strict=True):
            assert torch.equal(mine, theirs)


@pytest.mark.parametrize(
    ("env_id", "extra"),
    [
        ("Pendulum-v1", {"clip_range_vf": 0.2}),
        ("Pendulum-v1", {"ent_coef": 0.01, "policy_kwargs": {"activation_fn": nn.ReLU}}),
        ("CartPole-v1", {"clip_range_vf": 0.2}),
    ],
)
def test_a_training_run_by_hand_ends_with_stock_sb3s_parameters(env_id: str, extra: dict) -> None:
    """Three rollouts and updates of 1 env, normalized as the HalfCheetah spec does: the
    rollout's forward and the update's gradients by hand, against SB3's PPO and autograd."""
    models = []
    for cls in (PPO, PlatformPPO):
        env = VecNormalize(make_vec_env(env_id, n_envs=1, seed=4), gamma=0.99)
        model = cls("MlpPolicy", env, n_steps=256, batch_size=64, n_epochs=3, seed=4,
                    device="cpu", **extra)  # fmt: skip
        if cls is PlatformPPO:
            assert model._manual_loss() is not None
        model.learn(3 * 256)
        models.append(model)
    stock, ours = (m.policy.state_dict() for m in models)
    assert ours.keys() == stock.keys()
    for name, value in stock.items():
        assert torch.equal(ours[name], value), name
    episodes = [[(e["r"], e["l"]) for e in m.ep_info_buffer] for m in models]
    assert episodes[0] == episodes[1]
    assert len(episodes[0]) >= 3  # episodes ended (Pendulum's after 200 steps)


class Subclassed(ActorCriticPolicy):
    pass


def test_only_policies_it_covers_take_the_manual_path() -> None:
    assert ManualLoss.build(policy()) is not None
    assert ManualLoss.build(policy(nn.ELU)) is None  # an activation it does not differentiate
    box = gym.spaces.Box(-1, 1, (5,), np.float32)
    gaussian = ActorCriticPolicy(box, gym.spaces.Box(-1, 1, (2,), np.float32), lambda _: 1e-3)
    assert ManualLoss.build(gaussian) is not None
    sde = ActorCriticPolicy(
        box, gym.spaces.Box(-1, 1, (2,), np.float32), lambda _: 1e-3, use_sde=True
    )
    assert ManualLoss.build(sde) is None  # a state-dependent std: gSDE
    image = gym.spaces.Box(0, 255, (5,), np.uint8)
    assert (
        ManualLoss.build(ActorCriticPolicy(image, gym.spaces.Discrete(2), lambda _: 1e-3)) is None
    )
    assert ManualLoss.build(Subclassed(box, gym.spaces.Discrete(2), lambda _: 1e-3)) is None
    env = make_vec_env("CartPole-v1", n_envs=1, seed=0)
    assert PlatformPPO("MlpPolicy", env, device="cpu")._manual_loss() is not None
    # another objective keeps autograd
    assert kl_penalty_ppo("MlpPolicy", env, device="cpu")._manual_loss() is None
    assert isinstance(PlatformPPO("MlpPolicy", env, device="cpu"), PPO)
