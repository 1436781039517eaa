"""The compiled program trains: seeds batched together train as each would alone, a short run
on the spec's hyperparameters learns CartPole, and the trained agent is a plain
stable-baselines3 PPO whose `predict` is the compiled policy's argmax."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env

from ppo_platform.trainers.compiled.export import load_into_policy, params_from_policy
from ppo_platform.trainers.compiled.greedy import greedy_returns
from ppo_platform.trainers.compiled.network import logits_and_value
from ppo_platform.trainers.compiled.ppo import (
    CompiledConfig,
    CompiledPPO,
    metric_names,
)
from ppo_platform.trainers.compiled.seed_groups import group_sizes


def _config(total: int, env_id: str = "CartPole-v1", chunk: int = 4) -> CompiledConfig:
    return CompiledConfig(
        env_id,
        8,
        32,
        20,
        256,
        total,
        (1e-3, 0.0, True),
        (0.2, 0.0, True),
        gamma=0.98,
        gae_lambda=0.8,
        chunk=chunk,
    )


def test_seeds_split_over_threads_train_as_in_one_group_in_their_order():
    config = _config(256 * 3, chunk=2)
    program = CompiledPPO(config)
    chunks: list[tuple[int, np.ndarray, int]] = []

    def on_chunk(first, metrics, state):
        leaves = jax.tree_util.tree_leaves(state["params"])
        chunks.append((first, metrics["train/value_loss"].shape, leaves[0].shape[0]))

    one = program.train([3, 11, 5])
    split = program.train([3, 11, 5], on_chunk, threads=2)  # groups [3, 11] and [5]
    assert group_sizes(3, 2) == [2, 1] and group_sizes(2, 8) == [1, 1]
    assert chunks == [(0, (3, 2), 3), (2, (3, 1), 3)]  # every seed in every chunk, joined
    for name in ("train/approx_kl", "train/value_loss", "rollout/return_sum"):
        np.testing.assert_allclose(split.metrics[name], one.metrics[name], rtol=1e-3)
    for index in range(3):
        for a, b in zip(
            jax.tree_util.tree_leaves(split.seed_params(index)),
            jax.tree_util.tree_leaves(one.seed_params(index)),
            strict=True,
        ):
            np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5)


def test_seeds_batched_together_train_as_each_alone():
    config = _config(256 * 6)
    program = CompiledPPO(config)
    together = program.train([3, 11, 5])
    alone = program.train([11])
    assert together.updates == alone.updates == 6 and together.timesteps == 256 * 6
    for name in ("train/approx_kl", "train/value_loss", "rollout/return_sum"):
        np.testing.assert_allclose(together.metrics[name][1], alone.metrics[name][0], rtol=1e-3)
    assert not np.allclose(
        together.metrics["train/value_loss"][0], together.metrics["train/value_loss"][1]
    )
    for a, b in zip(
        jax.tree_util.tree_leaves(together.seed_params(1)),
        jax.tree_util.tree_leaves(alone.seed_params(0)),
        strict=True,
    ):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5)


def test_every_update_reports_every_metric_and_a_chunk_callback_can_stop_the_batch():
    config = _config(256 * 12)
    seen: list[int] = []

    def on_chunk(first: int, metrics: dict[str, np.ndarray], state: dict) -> bool:
        seen.append(first)
        assert set(metrics) == set(metric_names(config))
        assert all(values.shape == (2, 4) for values in metrics.values())
        assert state["params"]["action"]["w"].shape == (2, 64, 2)  # per seed
        return first >= 4  # stop after the second chunk

    run = CompiledPPO(config).train([0, 1], on_chunk)
    assert seen == [0, 4] and run.updates == 8
    assert np.isfinite(run.metrics["train/approx_kl"]).all()
    assert (run.metrics["train/approx_kl"] > 0).all()
    assert (run.metrics["train/clip_fraction"] >= 0).all()
    lr = run.metrics["train/learning_rate"][0]
    assert lr[0] == pytest.approx(1e-3 * (1 - 1 / 12), rel=1e-5)  # SB3's linear schedule
    assert (np.diff(lr) < 0).all()


def test_the_trained_agent_is_an_sb3_ppo_with_the_same_actions_and_values(tmp_path):
    config = _config(256 * 4)
    run = CompiledPPO(config).train([0])
    params = run.seed_params(0)
    model = PPO("MlpPolicy", make_vec_env("CartPole-v1", n_envs=1), device="cpu", seed=0)
    load_into_policy(model.policy, params)
    model.save(tmp_path / "agent.zip")
    loaded = PPO.load(tmp_path / "agent.zip", device="cpu")
    observations = np.random.default_rng(0).normal(0, 1, (200, 4)).astype(np.float32)
    logits, values = logits_and_value(params, jnp.asarray(observations), "tanh")
    actions, _ = loaded.predict(observations, deterministic=True)
    np.testing.assert_array_equal(actions, np.argmax(np.asarray(logits), axis=1))
    torch_values = loaded.policy.predict_values(loaded.policy.obs_to_tensor(observations)[0])
    np.testing.assert_allclose(torch_values.detach().numpy()[:, 0], values, rtol=1e-5, atol=1e-5)
    back, _ = params_from_policy(loaded.policy, 2, 2)
    for a, b in zip(
        jax.tree_util.tree_leaves(back), jax.tree_util.tree_leaves(params), strict=True
    ):
        np.testing.assert_array_equal(a, b)


def test_a_policy_with_another_shape_is_refused_with_the_layer_named():
    params = CompiledPPO(_config(256)).train([0]).seed_params(0)
    model = PPO(
        "MlpPolicy", make_vec_env("CartPole-v1", n_envs=1), policy_kwargs={"net_arch": [32]}
    )
    with pytest.raises(ValueError, match=re.escape("mlp_extractor.policy_net.0.weight")):
        load_into_policy(model.policy, params)


@pytest.mark.slow
@pytest.mark.parametrize(("env_id", "total", "solved"), [("CartPole-v1", 100_000, 475.0)])
def test_specs_cartpole_hyperparameters_solve_cartpole_in_100k_steps(env_id, total, solved):
    config = _config(total, env_id, chunk=64)
    run = CompiledPPO(config).train([0, 1])
    for index, seed in enumerate(run.seeds):
        assert greedy_returns(config, run.seed_params(index), seed, 10).mean() >= solved
