"""Synthetic metric series for the doctor: a healthy run, and one fault planted at a time."""

from __future__ import annotations

import math
from collections.abc import Callable

from ppo_platform.doctor import RunFacts

Series = dict[str, list[tuple[int, float]]]
UPDATES = 40
STEP = 2048

# The facts (the spec) of the CartPole-like run `healthy` stands for.
CARTPOLE = RunFacts(
    algorithm="ppo",
    env_id="CartPole-v1",
    learning_rate=1e-3,
    epochs=20,
    gamma=0.98,
    n_steps=32,
    n_envs=8,
    clip_epsilon=0.2,
    value_coef=0.5,
    entropy_coef=0.0,
    normalize_obs=False,
    normalize_reward=False,
    total_timesteps=40 * STEP,
    continuous=False,
)


def curve(fn: Callable[[int], float], name: str, series: Series) -> None:
    series[name] = [((i + 1) * STEP, float(fn(i))) for i in range(UPDATES)]


def wiggle(i: int, size: float) -> float:
    """A deterministic wobble: healthy metrics are never flat lines."""
    return size * math.sin(1.7 * i)


def healthy(continuous: bool = False) -> Series:
    """A CartPole-like run that learns: KL ~0.01, clip fraction ~0.15, rising return and
    explained variance, slowly falling entropy, sane scales."""
    s: Series = {}
    curve(lambda i: 0.01 + wiggle(i, 0.004), "train/approx_kl_post", s)
    curve(lambda i: 0.15 + wiggle(i, 0.03), "train/clip_fraction", s)
    curve(lambda i: min(0.9, 0.05 * i) + wiggle(i, 0.02), "train/explained_variance", s)
    curve(lambda i: -0.69 + 0.004 * i, "train/entropy_loss", s)
    curve(lambda i: 10 + wiggle(i, 2), "train/value_loss", s)
    curve(lambda i: 1e-3, "train/learning_rate", s)
    curve(lambda i: 20 + 10 * i + wiggle(i, 3), "rollout/ep_rew_mean", s)
    curve(lambda i: 20 + 10 * i + wiggle(i, 3), "rollout/ep_len_mean", s)
    curve(lambda i: 10.0, "train/returns_std", s)
    curve(lambda i: 30.0, "train/returns_rms", s)
    curve(lambda i: 0.0, "rollout/obs_nonfinite", s)
    curve(lambda i: 3.0 + wiggle(i, 0.5), "rollout/obs_abs_max", s)
    curve(lambda i: 0.0, "rollout/reward_nonfinite", s)
    curve(lambda i: 1.0, "rollout/reward_abs_max", s)
    if continuous:
        curve(lambda i: 1.0 - 0.01 * i, "train/std", s)
        curve(lambda i: 0.05, "rollout/action_clip_fraction", s)
    return s


def flat_return(s: Series, value: float = 20.0, noise: float = 2.0) -> None:
    """The return and episode length stop improving (noisy, not constant)."""
    curve(lambda i: value + wiggle(i, noise), "rollout/ep_rew_mean", s)
    curve(lambda i: value + wiggle(i, noise), "rollout/ep_len_mean", s)


def healthy_lm() -> Series:
    s: Series = {}
    curve(lambda i: 0.5 + wiggle(i, 0.1), "lm/kl_ref", s)
    curve(lambda i: 0.05 + wiggle(i, 0.01), "lm/kl_beta", s)
    curve(lambda i: -0.025, "lm/kl_penalty_mean", s)
    curve(lambda i: 0.2 + 0.01 * i, "lm/reward_mean", s)
    curve(lambda i: 12 + wiggle(i, 1), "lm/response_length", s)
    s["eval/mean_reward"] = [(STEP * k, 0.2 + 0.05 * k) for k in (1, 10, 20, 30, 40)]
    return s
