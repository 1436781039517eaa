"""The actor-critic of SB3's `MlpPolicy` for a discrete action space, as JAX arrays: separate
policy and value MLPs (`net_arch` {pi, vf}), orthogonal initialisation with SB3's gains
(sqrt 2 hidden, 0.01 action head, 1 value head, zero biases), and torch's Adam (eps 1e-5, as
SB3's PPO sets it) with torch's global-norm gradient clipping."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp

Params = dict[str, Any]
ACTIVATIONS = {"tanh": jnp.tanh, "relu": jax.nn.relu}
ADAM_BETAS, ADAM_EPS = (0.9, 0.999), 1e-5


def _orthonormal_columns(a: Any) -> Any:
    """The Q of `a`'s QR with R's diagonal positive (what `jax.nn.initializers.orthogonal`
    gets from LAPACK after its sign fix), by Gram-Schmidt done twice per column (orthogonal to
    float precision). Not LAPACK's QR: jaxlib's CPU QR splits a batch (our seeds) over XLA's
    thread pool and waits for the pieces from inside it, which deadlocked a process whose pool
    had two threads (every thread waiting for pieces no thread was free to run)."""

    def column(j: Any, q: Any) -> Any:
        v = a[:, j]
        for _ in range(2):
            v = v - q @ (q.T @ v)  # q's columns from j on are still zero
        return q.at[:, j].set(v / jnp.linalg.norm(v))

    return jax.lax.fori_loop(0, a.shape[1], column, jnp.zeros_like(a))


def orthogonal(key: Any, fan_in: int, fan_out: int, gain: float) -> Any:
    """`jax.nn.initializers.orthogonal(gain)(key, (fan_in, fan_out))`, without LAPACK."""
    tall = fan_in >= fan_out
    a = jax.random.normal(key, (fan_in, fan_out) if tall else (fan_out, fan_in), jnp.float32)
    q = _orthonormal_columns(a)
    return gain * (q if tall else q.T)


def _layer(key: Any, fan_in: int, fan_out: int, gain: float, ortho: bool) -> dict[str, Any]:
    if ortho:
        weight = orthogonal(key, fan_in, fan_out, gain)
        return {"w": weight, "b": jnp.zeros((fan_out,), jnp.float32)}
    bound = 1.0 / math.sqrt(fan_in)  # torch.nn.Linear's default
    k_w, k_b = jax.random.split(key)
    return {
        "w": jax.random.uniform(k_w, (fan_in, fan_out), jnp.float32, -bound, bound),
        "b": jax.random.uniform(k_b, (fan_out,), jnp.float32, -bound, bound),
    }


def _mlp(key: Any, sizes: Sequence[int], ortho: bool) -> list[dict[str, Any]]:
    keys = jax.random.split(key, max(len(sizes) - 1, 1))
    return [
        _layer(keys[i], sizes[i], sizes[i + 1], math.sqrt(2), ortho) for i in range(len(sizes) - 1)
    ]


def init_params(
    key: Any,
    observation_size: int,
    n_actions: int,
    pi_arch: Sequence[int],
    vf_arch: Sequence[int],
    ortho_init: bool = True,
) -> Params:
    k_pi, k_vf, k_a, k_v = jax.random.split(key, 4)
    pi_last = pi_arch[-1] if pi_arch else observation_size
    vf_last = vf_arch[-1] if vf_arch else observation_size
    return {
        "pi": _mlp(k_pi, [observation_size, *pi_arch], ortho_init),
        "vf": _mlp(k_vf, [observation_size, *vf_arch], ortho_init),
        "action": _layer(k_a, pi_last, n_actions, 0.01, ortho_init),
        "value": _layer(k_v, vf_last, 1, 1.0, ortho_init),
    }


def _forward(layers: list[dict[str, Any]], x: Any, activation: str) -> Any:
    act = ACTIVATIONS[activation]
    for layer in layers:
        x = act(x @ layer["w"] + layer["b"])
    return x


def logits_and_value(params: Params, observations: Any, activation: str) -> tuple[Any, Any]:
    """The action logits and the value of a batch of observations."""
    latent_pi = _forward(params["pi"], observations, activation)
    latent_vf = _forward(params["vf"], observations, activation)
    logits = latent_pi @ params["action"]["w"] + params["action"]["b"]
    value = (latent_vf @ params["value"]["w"] + params["value"]["b"])[..., 0]
    return logits, value


def adam_init(params: Params) -> dict[str, Any]:
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    return {"m": zeros, "v": zeros, "t": jnp.zeros((), jnp.int32)}


def clip_by_global_norm(grads: Params, max_norm: float) -> tuple[Params, Any]:
    """torch.nn.utils.clip_grad_norm_: scale by max_norm / (norm + 1e-6) when that is < 1;
    returns the clipped gradients and the norm before clipping."""
    leaves = jax.tree_util.tree_leaves(grads)
    norm = jnp.sqrt(sum(jnp.sum(g * g) for g in leaves))
    scale = jnp.minimum(max_norm / (norm + 1e-6), 1.0)
    return jax.tree_util.tree_map(lambda g: g * scale, grads), norm


def adam_step(params: Params, grads: Params, state: dict[str, Any], lr: Any) -> tuple[Any, Any]:
    """torch.optim.Adam's update (no weight decay, no amsgrad)."""
    b1, b2 = ADAM_BETAS
    t = state["t"] + 1
    m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, state["m"], grads)
    v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, state["v"], grads)
    correction1 = 1 - b1 ** t.astype(jnp.float32)
    correction2 = 1 - b2 ** t.astype(jnp.float32)

    def update(p: Any, m: Any, v: Any) -> Any:
        denom = jnp.sqrt(v) / jnp.sqrt(correction2) + ADAM_EPS
        return p - (lr / correction1) * m / denom

    new = jax.tree_util.tree_map(update, params, m, v)
    return new, {"m": m, "v": v, "t": t}
