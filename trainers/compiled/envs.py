"""Functional JAX ports of gymnasium's CartPole-v1 and Acrobot-v1 (same dynamics, constants,
termination, time limit and reset distribution), for the compiled PPO path.

An env is `reset(key) -> state` and `step(state, action) -> (state, reward, terminated)`;
`observe(state)` gives the observation. States are float32 (gymnasium integrates in float64:
trajectories agree to float32 rounding, tested in tests/trainers_tests/compiled). The time
limit is counted in the state, as gymnasium's TimeLimit wrapper counts it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

Array = Any


@dataclass(frozen=True)
class JaxEnv:
    """One env as pure functions; `state` is (physics, elapsed steps)."""

    env_id: str
    observation_size: int
    n_actions: int
    max_episode_steps: int
    reset_physics: Callable[[Array], Array]
    step_physics: Callable[[Array, Array], tuple[Array, Array, Array]]  # -> physics, r, term
    observe: Callable[[Array], Array]


# --- CartPole-v1 (gymnasium/envs/classic_control/cartpole.py, euler integrator) -------------
_GRAVITY, _MASSCART, _MASSPOLE, _LENGTH, _FORCE, _TAU = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
_TOTAL_MASS = _MASSPOLE + _MASSCART
_POLEMASS_LENGTH = _MASSPOLE * _LENGTH
_THETA_LIMIT = 12 * 2 * math.pi / 360
_X_LIMIT = 2.4


def _cartpole_reset(key: Array) -> Array:
    return jax.random.uniform(key, (4,), jnp.float32, -0.05, 0.05)


def _cartpole_step(state: Array, action: Array) -> tuple[Array, Array, Array]:
    x, x_dot, theta, theta_dot = state[0], state[1], state[2], state[3]
    force = jnp.where(action == 1, _FORCE, -_FORCE)
    cos, sin = jnp.cos(theta), jnp.sin(theta)
    temp = (force + _POLEMASS_LENGTH * theta_dot**2 * sin) / _TOTAL_MASS
    theta_acc = (_GRAVITY * sin - cos * temp) / (
        _LENGTH * (4.0 / 3.0 - _MASSPOLE * cos**2 / _TOTAL_MASS)
    )
    x_acc = temp - _POLEMASS_LENGTH * theta_acc * cos / _TOTAL_MASS
    x = x + _TAU * x_dot
    x_dot = x_dot + _TAU * x_acc
    theta = theta + _TAU * theta_dot
    theta_dot = theta_dot + _TAU * theta_acc
    new = jnp.stack([x, x_dot, theta, theta_dot])
    terminated = (jnp.abs(x) > _X_LIMIT) | (jnp.abs(theta) > _THETA_LIMIT)
    return new, jnp.float32(1.0), terminated  # CartPole pays 1 on the terminating step too


CARTPOLE = JaxEnv("CartPole-v1", 4, 2, 500, _cartpole_reset, _cartpole_step, lambda s: s)


# --- Acrobot-v1 (gymnasium/envs/classic_control/acrobot.py, "book" dynamics, one RK4 step) ---
_DT, _MAX_VEL_1, _MAX_VEL_2 = 0.2, 4 * math.pi, 9 * math.pi
_M1 = _M2 = _L1 = _I1 = _I2 = 1.0
_LC1 = _LC2 = 0.5
_G = 9.8


def _acrobot_reset(key: Array) -> Array:
    return jax.random.uniform(key, (4,), jnp.float32, -0.1, 0.1)


def _dsdt(s: Array, torque: Array) -> Array:
    theta1, theta2, dtheta1, dtheta2 = s[0], s[1], s[2], s[3]
    d1 = _M1 * _LC1**2 + _M2 * (_L1**2 + _LC2**2 + 2 * _L1 * _LC2 * jnp.cos(theta2)) + _I1 + _I2
    d2 = _M2 * (_LC2**2 + _L1 * _LC2 * jnp.cos(theta2)) + _I2
    phi2 = _M2 * _LC2 * _G * jnp.cos(theta1 + theta2 - math.pi / 2.0)
    phi1 = (
        -_M2 * _L1 * _LC2 * dtheta2**2 * jnp.sin(theta2)
        - 2 * _M2 * _L1 * _LC2 * dtheta2 * dtheta1 * jnp.sin(theta2)
        + (_M1 * _LC1 + _M2 * _L1) * _G * jnp.cos(theta1 - math.pi / 2)
        + phi2
    )
    ddtheta2 = (
        torque + d2 / d1 * phi1 - _M2 * _L1 * _LC2 * dtheta1**2 * jnp.sin(theta2) - phi2
    ) / (_M2 * _LC2**2 + _I2 - d2**2 / d1)
    ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
    return jnp.stack([dtheta1, dtheta2, ddtheta1, ddtheta2])


def _wrap(x: Array) -> Array:
    return jnp.where(x > math.pi, x - 2 * math.pi, jnp.where(x < -math.pi, x + 2 * math.pi, x))


def _acrobot_step(state: Array, action: Array) -> tuple[Array, Array, Array]:
    torque = action.astype(jnp.float32) - 1.0  # AVAIL_TORQUE = [-1, 0, 1]
    k1 = _dsdt(state, torque)
    k2 = _dsdt(state + _DT / 2 * k1, torque)
    k3 = _dsdt(state + _DT / 2 * k2, torque)
    k4 = _dsdt(state + _DT * k3, torque)
    s = state + _DT / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    s = jnp.stack(
        [
            _wrap(s[0]),
            _wrap(s[1]),
            jnp.clip(s[2], -_MAX_VEL_1, _MAX_VEL_1),
            jnp.clip(s[3], -_MAX_VEL_2, _MAX_VEL_2),
        ]
    )
    terminated = -jnp.cos(s[0]) - jnp.cos(s[1] + s[0]) > 1.0
    return s, jnp.where(terminated, 0.0, -1.0).astype(jnp.float32), terminated


def _acrobot_observe(s: Array) -> Array:
    return jnp.stack([jnp.cos(s[0]), jnp.sin(s[0]), jnp.cos(s[1]), jnp.sin(s[1]), s[2], s[3]])


ACROBOT = JaxEnv("Acrobot-v1", 6, 3, 500, _acrobot_reset, _acrobot_step, _acrobot_observe)

JAX_ENVS: dict[str, JaxEnv] = {env.env_id: env for env in (CARTPOLE, ACROBOT)}


def auto_reset_step(
    env: JaxEnv, physics: Array, elapsed: Array, action: Array, key: Array
) -> tuple[Array, Array, Array, Array, Array, Array]:
    """One same-step auto-reset step, as SB3's vector envs give it: (physics, elapsed, reward,
    terminated, truncated, final observation). When an episode ends the state returned is a
    fresh reset's; the final observation is the one the episode ended on (for bootstrapping a
    truncated episode's value)."""
    new, reward, terminated = env.step_physics(physics, action)
    elapsed = elapsed + 1
    truncated = (elapsed >= env.max_episode_steps) & ~terminated
    done = terminated | truncated
    final_observation = env.observe(new)
    fresh = env.reset_physics(key)
    physics = jnp.where(done, fresh, new)
    elapsed = jnp.where(done, 0, elapsed)
    return physics, elapsed, reward, terminated, truncated, final_observation
