"""ppo_platform.trainers.fast.optimizer_step: torch's clipped Adam step bit for bit."""

from __future__ import annotations

import copy

import torch
from gymnasium import spaces
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env

from ppo_platform.trainers.fast.optimizer_step import MinibatchStep, use_foreach_optimizer
from ppo_platform.trainers.ppo import PlatformPPO
from tests.trainers_tests.trainer_rollouts import with_rollout

MAX_NORM = 0.01  # below the gradient norms here: the clip acts


def batch(model: PPO) -> tuple[torch.Tensor, torch.Tensor]:
    sample = next(iter(model.rollout_buffer.get(64)))
    actions = sample.actions
    if isinstance(model.action_space, spaces.Discrete):
        actions = actions.long().flatten()
    return sample.observations, actions


def loss_of(model: PPO, observations: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    values, log_prob, entropy = model.policy.evaluate_actions(observations, actions)
    assert entropy is not None
    return values.square().mean() - log_prob.mean() - 0.01 * entropy.mean()


def test_minibatch_step_takes_torchs_clipped_adam_step_bit_for_bit() -> None:
    model = with_rollout(PPO, "CartPole-v1", seed=2, n_steps=64)
    use_foreach_optimizer(model.policy.optimizer)  # as PlatformPPO sets it up
    observations, actions = batch(model)
    twin = copy.deepcopy(model)
    ours = MinibatchStep(model.policy.optimizer, list(model.policy.parameters()))
    assert ours.lean  # SB3's default Adam on CPU (foreach, set by PlatformPPO) takes the lean path
    parameters = list(twin.policy.parameters())
    for _ in range(5):  # the first step builds torch's Adam state, the next ones are lean
        norm = ours(loss_of(model, observations, actions), MAX_NORM)
        twin.policy.optimizer.zero_grad()
        loss_of(twin, observations, actions).backward()
        expected = torch.nn.utils.clip_grad_norm_(parameters, MAX_NORM)
        twin.policy.optimizer.step()
        assert torch.equal(norm, expected)
    assert expected.item() > MAX_NORM  # the clip did act
    for mine, theirs in zip(model.policy.parameters(), parameters, strict=True):
        assert torch.equal(mine, theirs)
    # The optimizer state stays torch's: the twin's optimizer loads it and continues.
    twin.policy.optimizer.load_state_dict(model.policy.optimizer.state_dict())
    assert float(twin.policy.optimizer.state[parameters[0]]["step"]) == 5.0


def test_a_custom_optimizer_takes_torchs_own_step() -> None:
    env = make_vec_env("CartPole-v1", n_envs=2, seed=0)
    kwargs = {"optimizer_class": torch.optim.SGD}
    model = PlatformPPO("MlpPolicy", env, seed=0, device="cpu", policy_kwargs=kwargs)
    assert not MinibatchStep(model.policy.optimizer, list(model.policy.parameters())).lean
