"""Same-step autoreset for gymnasium's native vector envs (gymnasium only: `validate` imports it).

gymnasium 1.x native envs such as `CartPoleVectorEnv` reset on the *next* step
(`AutoresetMode.NEXT_STEP`: the step after an end ignores its action and returns the reset
observation with reward 0), which would put a transition that never happened into every SB3
rollout. `same_step` converts the envs it knows (CartPole) by resetting the ended copies in the
step that ended them, drawing their start states from the env's own generator and bounds exactly
as its next step would have; envs already same-step pass through.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.envs.classic_control.cartpole import CartPoleVectorEnv
from gymnasium.vector import AutoresetMode, VectorEnv, VectorWrapper

# Keys of a same-step vector env's info that describe the ended episode, not the step.
FINAL_KEYS = frozenset({"final_obs", "_final_obs", "final_info", "_final_info"})


class CartPoleSameStep(VectorWrapper):
    """`CartPoleVectorEnv` with same-step autoreset: an ended copy is reset in the step that ended
    it, its last observation in `info["final_obs"]` (gymnasium's same-step convention)."""

    def __init__(self, env: VectorEnv) -> None:
        super().__init__(env)
        self.metadata = {**env.metadata, "autoreset_mode": AutoresetMode.SAME_STEP}

    def step(self, actions: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(actions)
        done = terminated | truncated
        if not done.any():
            return obs, reward, terminated, truncated, info
        inner: Any = self.env.unwrapped
        final = np.empty(self.num_envs, dtype=object)
        for i in np.flatnonzero(done):
            final[i] = obs[i]
        inner.state[:, done] = inner.np_random.uniform(
            low=inner.low, high=inner.high, size=(4, int(done.sum()))
        )
        inner.steps[done] = 0
        inner.prev_done[:] = False  # reset already: the next step is an ordinary one for all
        obs = inner.state.T.astype(np.float32)
        return obs, reward, terminated, truncated, {**info, "final_obs": final, "_final_obs": done}


# Native vector envs with next-step autoreset that `same_step` converts, by class.
SAME_STEP_CONVERTERS: dict[type, type[VectorWrapper]] = {CartPoleVectorEnv: CartPoleSameStep}


def autoreset_mode(env: VectorEnv) -> Any:
    return (env.metadata or {}).get("autoreset_mode", AutoresetMode.NEXT_STEP)


def convertible(env_class: type) -> bool:
    """Whether `same_step` can give SB3's convention for envs of `env_class` (no env built)."""
    metadata = getattr(env_class, "metadata", None) or {}
    return (
        metadata.get("autoreset_mode") == AutoresetMode.SAME_STEP
        or env_class in SAME_STEP_CONVERTERS
    )


def same_step(env: VectorEnv) -> VectorEnv:
    """`env` with same-step autoreset; ValueError for a next-step env this module cannot convert."""
    if autoreset_mode(env) == AutoresetMode.SAME_STEP:
        return env
    converter = SAME_STEP_CONVERTERS.get(type(env.unwrapped))
    if converter is None:
        raise ValueError(
            f"{type(env.unwrapped).__name__} resets on the next step and cannot be converted to "
            "SB3's same-step convention; use a per-env vectorization (dummy or subproc)."
        )
    return converter(env)
