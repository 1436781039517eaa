"""The post-update KL: the rollout policy against the updated one over the whole rollout."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from stable_baselines3 import PPO
from trainer_rollouts import collect_one_rollout, train_seeded, with_rollout

from ppo_platform.trainers.losses import k3_kl
from ppo_platform.trainers.ppo import PlatformPPO, kl_penalty_ppo

SEED = 5


def collected(cls: type[PPO], **kwargs: Any) -> PPO:
    """A seeded CartPole model (2 envs x 64 steps) that has collected one rollout."""
    params: dict[str, Any] = {"n_steps": 64, "batch_size": 128, "learning_rate": 3e-3}
    return with_rollout(cls, "CartPole-v1", seed=SEED, **{**params, **kwargs})


def test_one_epoch_one_minibatch_reads_zero_minibatch_kl_but_a_positive_post_update_kl() -> None:
    metrics = train_seeded(collected(PlatformPPO, n_epochs=1))
    assert metrics["train/approx_kl"] == 0.0  # measured before the only step: SB3's blind spot
    assert metrics["train/approx_kl_post"] > 1e-6


def test_post_update_kl_is_the_k3_kl_of_the_updated_policy_on_the_rollout() -> None:
    model = collected(PlatformPPO, n_epochs=3)
    metrics = train_seeded(model)
    buffer = model.rollout_buffer
    observations = torch.as_tensor(buffer.observations)
    actions = torch.as_tensor(buffer.actions).long().flatten()
    with torch.no_grad():
        log_prob = model.policy.get_distribution(observations).log_prob(actions)
    expected = k3_kl(log_prob, torch.as_tensor(buffer.log_probs.reshape(-1)))
    assert metrics["train/approx_kl_post"] == pytest.approx(float(expected), rel=1e-5)


def test_post_update_kl_draws_no_random_numbers_and_changes_no_parameter() -> None:
    stock, ours = collected(PPO, n_epochs=2), collected(PlatformPPO, n_epochs=2)
    train_seeded(stock)
    stock_rng = np.random.get_state()[1].copy(), torch.get_rng_state().clone()
    train_seeded(ours)
    assert np.array_equal(np.random.get_state()[1], stock_rng[0])
    assert torch.equal(torch.get_rng_state(), stock_rng[1])
    for name, value in stock.policy.state_dict().items():
        torch.testing.assert_close(ours.policy.state_dict()[name], value, msg=name)


def test_target_kl_on_the_post_update_kl_stops_after_the_epoch_that_crossed_it() -> None:
    model = collected(PlatformPPO, n_epochs=10, target_kl=1e-4, kl_source="post_update")
    metrics = train_seeded(model)
    assert metrics["train/early_stop_epoch"] == 1.0
    assert metrics["train/approx_kl_post"] > 1.5e-4
    assert "train/approx_kl_epoch_02" not in metrics


def test_target_kl_on_the_post_update_kl_lets_a_calm_update_run_every_epoch() -> None:
    model = collected(PlatformPPO, n_epochs=3, target_kl=10.0, kl_source="post_update")
    metrics = train_seeded(model)
    assert "train/early_stop_epoch" not in metrics
    assert "train/approx_kl_epoch_03" in metrics


def test_kl_penalty_trainer_reports_the_post_update_kl_too() -> None:
    metrics = train_seeded(collected(kl_penalty_ppo, n_epochs=1))
    assert metrics["train/approx_kl_post"] > 0.0


def test_unknown_kl_source_is_refused() -> None:
    with pytest.raises(ValueError, match="kl_source"):
        collected(PlatformPPO, kl_source="epoch")


def test_kl_source_survives_save_and_load(tmp_path) -> None:
    model = collected(PlatformPPO, kl_source="post_update")
    model.save(tmp_path / "m.zip")
    assert PlatformPPO.load(tmp_path / "m.zip", device="cpu").kl_source == "post_update"


def test_post_update_kl_works_on_dict_observations() -> None:
    from stable_baselines3.common.envs import SimpleMultiObsEnv

    model = PlatformPPO(
        "MultiInputPolicy", SimpleMultiObsEnv(), n_steps=32, batch_size=32, n_epochs=1, seed=0
    )
    metrics = train_seeded(collect_one_rollout(model, total_timesteps=1_000))
    assert metrics["train/approx_kl"] == 0.0 and metrics["train/approx_kl_post"] > 0.0
