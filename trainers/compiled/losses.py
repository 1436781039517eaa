"""PPO's loss terms on one minibatch, as pure JAX functions (each tested against the torch
trainer's on the same batch, tests/trainers_tests/compiled/test_compiled_losses.py)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp


def normalized(advantages: Any) -> Any:
    """SB3's per-minibatch normalisation: (A - mean) / (std + 1e-8), std unbiased (torch's)."""
    return (advantages - advantages.mean()) / (jnp.std(advantages, ddof=1) + 1e-8)


def clipped_surrogate(log_prob: Any, old_log_prob: Any, advantages: Any, clip: Any) -> Any:
    """-mean(min(r A, clip(r, 1 - eps, 1 + eps) A)), the ratio r taken in log space."""
    ratio = jnp.exp(log_prob - old_log_prob)
    return -jnp.minimum(ratio * advantages, jnp.clip(ratio, 1 - clip, 1 + clip) * advantages).mean()


def value_loss(values: Any, old_values: Any, returns: Any, clip_vf: float | None) -> Any:
    """mse(returns, V), V clipped to old V +- clip_vf when `clip_vf` is set (SB3's)."""
    if clip_vf is not None:
        values = old_values + jnp.clip(values - old_values, -clip_vf, clip_vf)
    return jnp.mean((returns - values) ** 2)


def categorical(logits: Any, actions: Any) -> tuple[Any, Any]:
    """Log-probabilities of `actions` and the entropy, per row."""
    log_p = jax.nn.log_softmax(logits)
    chosen = jnp.take_along_axis(log_p, actions[..., None], axis=-1)[..., 0]
    entropy = -jnp.sum(jnp.exp(log_p) * log_p, axis=-1)
    return chosen, entropy


def approx_kl(log_prob: Any, old_log_prob: Any) -> Any:
    """k3 = mean((r - 1) - log r), as trainers/losses.py measures it."""
    log_ratio = log_prob - old_log_prob
    return jnp.mean(jnp.exp(log_ratio) - 1 - log_ratio)


def clip_fraction(log_prob: Any, old_log_prob: Any, clip: Any) -> Any:
    return jnp.mean((jnp.abs(jnp.exp(log_prob - old_log_prob) - 1) > clip).astype(jnp.float32))


def explained_variance(predicted: Any, returns: Any) -> Any:
    """SB3's: 1 - Var[returns - predicted] / Var[returns] (NaN when Var[returns] is 0)."""
    var = jnp.var(returns)
    return jnp.where(var == 0, jnp.nan, 1 - jnp.var(returns - predicted) / var)


def gae(
    rewards: Any,
    values: Any,
    dones: Any,
    last_values: Any,
    gamma: float,
    gae_lambda: float,
) -> tuple[Any, Any]:
    """SB3's `compute_returns_and_advantage` over (steps, envs) arrays; `dones[t]`: the episode
    ended at step t (the next step's `episode_start`). Returns (advantages, returns)."""
    next_values = jnp.concatenate([values[1:], last_values[None]], axis=0)
    not_done = 1.0 - dones.astype(jnp.float32)
    deltas = rewards + gamma * next_values * not_done - values

    def back(carry: Any, x: Any) -> tuple[Any, Any]:
        delta, nd = x
        carry = delta + gamma * gae_lambda * nd * carry
        return carry, carry

    _, advantages = jax.lax.scan(
        back, jnp.zeros_like(last_values), (deltas, not_done), reverse=True
    )
    return advantages, advantages + values
