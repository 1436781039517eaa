"""Each loss term of the compiled path against the torch trainer's (trainers/losses.py) and
stable-baselines3's on the same batch."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from gymnasium import spaces
from stable_baselines3.common.buffers import RolloutBuffer
from torch.distributions import Categorical

from ppo_platform.trainers import losses as torch_losses
from ppo_platform.trainers.compiled import losses as L


@pytest.fixture
def batch():
    rng = np.random.default_rng(7)
    n = 512
    old = rng.normal(-0.7, 0.3, n).astype(np.float32)
    new = (old + rng.normal(0, 0.25, n)).astype(np.float32)  # ratios on both sides of the clip
    return {
        "new": new,
        "old": old,
        "adv": rng.normal(0.5, 2.0, n).astype(np.float32),
        "values": rng.normal(3, 1, n).astype(np.float32),
        "old_values": rng.normal(3, 1, n).astype(np.float32),
        "returns": rng.normal(3.5, 1.5, n).astype(np.float32),
        "logits": rng.normal(0, 1.5, (n, 3)).astype(np.float32),
        "actions": rng.integers(0, 3, n),
    }


def _t(x):
    return torch.from_numpy(np.asarray(x))


def test_clipped_surrogate_kl_and_clip_fraction_equal_the_torch_trainers(batch):
    out = torch_losses.clipped_policy_loss(
        _t(batch["new"]), _t(batch["old"]), _t(batch["adv"]), clip_epsilon=0.2
    )
    clip_fraction = float(out.clip_fraction)
    assert 0.1 < clip_fraction < 0.9  # both branches of the min are exercised
    ours = L.clipped_surrogate(batch["new"], batch["old"], batch["adv"], 0.2)
    assert float(ours) == pytest.approx(float(out.loss), rel=1e-5)
    assert float(L.approx_kl(batch["new"], batch["old"])) == pytest.approx(
        float(out.approx_kl), rel=1e-5
    )
    assert float(L.clip_fraction(batch["new"], batch["old"], 0.2)) == pytest.approx(clip_fraction)


def test_advantage_normalisation_is_sb3s(batch):
    adv = _t(batch["adv"])
    sb3 = (adv - adv.mean()) / (adv.std() + 1e-8)  # stable_baselines3/ppo/ppo.py
    np.testing.assert_allclose(L.normalized(batch["adv"]), sb3.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("clip_vf", [None, 0.2])
def test_value_loss_with_and_without_clipping_is_sb3s(batch, clip_vf):
    values, old = _t(batch["values"]), _t(batch["old_values"])
    if clip_vf is not None:
        values = old + torch.clamp(values - old, -clip_vf, clip_vf)
    expected = F.mse_loss(_t(batch["returns"]), values)
    ours = L.value_loss(batch["values"], batch["old_values"], batch["returns"], clip_vf)
    assert float(ours) == pytest.approx(float(expected), rel=1e-5)
    if clip_vf is not None:  # the clip changed the loss: the test sees the clipping
        unclipped = L.value_loss(batch["values"], batch["old_values"], batch["returns"], None)
        assert abs(float(unclipped) - float(ours)) > 0.02


def test_log_probs_and_entropy_are_torchs_categorical(batch):
    dist = Categorical(logits=_t(batch["logits"]))
    log_prob, entropy = L.categorical(jnp.asarray(batch["logits"]), jnp.asarray(batch["actions"]))
    np.testing.assert_allclose(
        log_prob, dist.log_prob(_t(batch["actions"])).numpy(), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(entropy, dist.entropy().numpy(), rtol=1e-5, atol=1e-6)


def test_explained_variance_is_the_torch_trainers_and_nan_on_constant_returns(batch):
    expected = torch_losses.explained_variance(_t(batch["values"]), _t(batch["returns"]))
    assert float(L.explained_variance(batch["values"], batch["returns"])) == pytest.approx(
        float(expected), rel=1e-4
    )
    assert np.isnan(float(L.explained_variance(batch["values"][:8], np.ones(8, np.float32))))


def test_gae_equals_sb3s_rollout_buffer_across_episode_ends():
    steps, envs, gamma, lam = 32, 4, 0.98, 0.8
    rng = np.random.default_rng(3)
    rewards = rng.normal(1, 1, (steps, envs)).astype(np.float32)
    values = rng.normal(5, 2, (steps, envs)).astype(np.float32)
    dones = rng.random((steps, envs)) < 0.1  # dones[t]: the episode ended at step t
    last_values = rng.normal(5, 2, envs).astype(np.float32)
    buffer = RolloutBuffer(
        steps, spaces.Box(-1, 1, (1,)), spaces.Discrete(2), n_envs=envs, gamma=gamma, gae_lambda=lam
    )
    buffer.rewards[:] = rewards
    buffer.values[:] = values
    buffer.episode_starts[1:] = dones[:-1]  # SB3 keeps "this step starts an episode"
    buffer.compute_returns_and_advantage(torch.from_numpy(last_values), dones[-1])
    advantages, returns = L.gae(rewards, values, dones, last_values, gamma, lam)
    assert dones.sum() > 5
    np.testing.assert_allclose(advantages, buffer.advantages, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(returns, buffer.returns, rtol=1e-5, atol=1e-5)
