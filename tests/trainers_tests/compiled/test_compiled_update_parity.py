"""A whole update of the compiled path equals stable-baselines3's `PPO.train` on the same
rollout from the same weights: K epochs, the clipped surrogate, value clipping, the entropy
bonus, gradient clipping and Adam, compared weight by weight afterwards. One minibatch per
epoch, so SB3's shuffling order does not enter."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env

from ppo_platform.trainers.compiled.export import params_from_policy
from ppo_platform.trainers.compiled.ppo import CompiledConfig, optimise


def _sb3(clip_vf: float | None, ent_coef: float) -> PPO:
    env = make_vec_env("CartPole-v1", n_envs=8, seed=0)
    model = PPO(
        "MlpPolicy",
        env,
        n_steps=32,
        batch_size=256,
        n_epochs=5,
        learning_rate=1e-3,
        clip_range=0.2,
        clip_range_vf=clip_vf,
        ent_coef=ent_coef,
        max_grad_norm=0.5,
        gamma=0.98,
        gae_lambda=0.8,
        seed=0,
        device="cpu",
    )
    model.learn(256 * 3)  # three updates: Adam's moments are not at zero any more
    model._setup_learn(256, reset_num_timesteps=False)  # a fresh rollout
    model.collect_rollouts(model.env, model._init_callback(None), model.rollout_buffer, 32)
    return model


@pytest.mark.parametrize(("clip_vf", "ent_coef"), [(None, 0.0), (0.2, 0.01)])
def test_one_update_gives_sb3s_weights(clip_vf, ent_coef):
    model = _sb3(clip_vf, ent_coef)
    params, adam = params_from_policy(model.policy, 2, 2)
    assert adam is not None and int(adam["t"]) == 15  # 3 updates x 5 epochs
    buffer = model.rollout_buffer
    flat = (
        jnp.asarray(buffer.observations.reshape(256, 4)),
        jnp.asarray(buffer.actions.reshape(256).astype(np.int32)),
        jnp.asarray(buffer.log_probs.reshape(256)),
        jnp.asarray(buffer.values.reshape(256)),
        jnp.asarray(buffer.advantages.reshape(256)),
        jnp.asarray(buffer.returns.reshape(256)),
    )
    config = CompiledConfig(
        "CartPole-v1",
        8,
        32,
        5,
        256,
        256 * 4,
        (1e-3, 0.0, False),
        (0.2, 0.0, False),
        clip_range_vf=clip_vf,
        ent_coef=ent_coef,
        gamma=0.98,
        gae_lambda=0.8,
    )
    new_params, new_adam, stats = jax.jit(
        lambda p, o, f: optimise(config, p, o, f, 1e-3, 0.2, jax.random.PRNGKey(0))
    )(params, adam, flat)
    model.train()
    expected, expected_adam = params_from_policy(model.policy, 2, 2)
    moved = jax.tree_util.tree_map(lambda a, b: np.abs(np.asarray(a) - b).max(), expected, params)
    assert max(jax.tree_util.tree_leaves(moved)) > 1e-3  # the update moved the weights
    for ours, theirs in zip(
        jax.tree_util.tree_leaves(new_params), jax.tree_util.tree_leaves(expected), strict=True
    ):
        np.testing.assert_allclose(np.asarray(ours), theirs, rtol=1e-4, atol=2e-5)
    assert int(new_adam["t"]) == int(expected_adam["t"]) == 20
    kl_last_epoch = float(stats[3][-1].mean())
    assert kl_last_epoch == pytest.approx(model.logger.name_to_value["train/approx_kl"], rel=1e-3)
    assert float(stats[1].mean()) == pytest.approx(
        model.logger.name_to_value["train/value_loss"], rel=1e-4
    )
