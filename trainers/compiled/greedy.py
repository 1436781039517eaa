"""A trained seed's greedy (argmax) returns, played in JAX on the env's port: a check of the
compiled program's learning without the SB3 model."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ppo_platform.trainers.compiled.network import logits_and_value
from ppo_platform.trainers.compiled.ppo import CompiledConfig


def greedy_returns(config: CompiledConfig, params: Any, seed: int, episodes: int) -> np.ndarray:
    """Deterministic (argmax) returns of `episodes` episodes of one seed's policy, in JAX."""
    env = config.env

    def episode(key: Any) -> Any:
        def cond(state: Any) -> Any:
            return ~state[3]

        def body(state: Any) -> Any:
            physics, elapsed, total, _ = state
            logits, _ = logits_and_value(params, env.observe(physics)[None], config.activation)
            physics, reward, terminated = env.step_physics(physics, jnp.argmax(logits[0]))
            elapsed = elapsed + 1
            return physics, elapsed, total + reward, terminated | (elapsed >= env.max_episode_steps)

        start = (env.reset_physics(key), jnp.int32(0), jnp.float32(0.0), jnp.bool_(False))
        return jax.lax.while_loop(cond, body, start)[2]

    keys = jax.random.split(jax.random.PRNGKey(seed + 1_000_003), episodes)
    return np.asarray(jax.jit(jax.vmap(episode))(keys))
