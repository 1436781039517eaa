"""The JAX ports step as gymnasium's envs do: from the same state, one step gives the same
state, observation, reward and termination (float32 against gymnasium's float64)."""

from __future__ import annotations

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ppo_platform.trainers.compiled.envs import JAX_ENVS, auto_reset_step


def _gym_state(env: gym.Env) -> np.ndarray:
    return np.asarray(env.unwrapped.state, dtype=np.float64)  # type: ignore[attr-defined]


def _action(env_id: str, state: np.ndarray, rng: np.random.Generator) -> int:
    """Random for CartPole (it falls soon); for Acrobot, torque along the second joint's
    velocity, which pumps energy and swings it up in about 100 steps, so its termination is
    compared too."""
    if env_id == "Acrobot-v1":
        return 2 if state[3] > 0 else 0
    return int(rng.integers(2))


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Acrobot-v1"])
def test_each_step_from_gymnasiums_state_matches_gymnasium(env_id):
    port = JAX_ENVS[env_id]
    step = jax.jit(port.step_physics)
    observe = jax.jit(port.observe)
    env = gym.make(env_id)
    rng = np.random.default_rng(0)
    compared = terminations = 0
    for episode in range(8):
        observation, _ = env.reset(seed=episode)
        np.testing.assert_allclose(
            observe(jnp.asarray(_gym_state(env), jnp.float32)), observation, atol=1e-6
        )
        done = False
        while not done:
            before = jnp.asarray(_gym_state(env), jnp.float32)
            action = _action(env_id, _gym_state(env), rng)
            observation, reward, terminated, truncated, _ = env.step(action)
            state, jax_reward, jax_terminated = step(before, jnp.int32(action))
            np.testing.assert_allclose(state, _gym_state(env), rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(observe(state), observation, rtol=1e-5, atol=1e-5)
            assert float(jax_reward) == reward
            assert bool(jax_terminated) == terminated
            compared += 1
            terminations += terminated
            done = terminated or truncated
    assert compared > 100 and terminations > 0  # the comparison covered real episodes' ends


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Acrobot-v1"])
def test_reset_draws_gymnasiums_start_distribution(env_id):
    port = JAX_ENVS[env_id]
    starts = np.asarray(jax.vmap(port.reset_physics)(jax.random.split(jax.random.PRNGKey(0), 2000)))
    bound = 0.05 if env_id == "CartPole-v1" else 0.1  # gymnasium's reset bounds
    assert starts.min() >= -bound and starts.max() <= bound
    assert starts.min() < -0.9 * bound and starts.max() > 0.9 * bound
    assert abs(starts.mean()) < 0.05 * bound


def test_the_time_limit_truncates_and_the_state_resets_on_the_same_step():
    port = JAX_ENVS["Acrobot-v1"]  # random actions rarely swing it up: episodes hit 500
    physics = port.reset_physics(jax.random.PRNGKey(1))
    step = jax.jit(lambda p, e, k: auto_reset_step(port, p, e, jnp.int32(1), k))
    elapsed = jnp.int32(0)
    for t in range(1, 501):
        before = physics
        physics, elapsed, _, terminated, truncated, final = step(
            physics, elapsed, jax.random.PRNGKey(t)
        )
        if terminated:
            pytest.fail(f"Acrobot terminated at step {t} under a constant zero torque")
    assert bool(truncated) and not bool(terminated) and int(elapsed) == 0
    expected_final = port.observe(port.step_physics(before, jnp.int32(1))[0])
    np.testing.assert_allclose(final, expected_final)
    assert not np.allclose(port.observe(physics), final)  # the next state is a fresh reset's
