"""NativeVecEnv: gymnasium's CartPoleVectorEnv with SB3's conventions (same-step reset, the
terminal observation, TimeLimit.truncated, Monitor's episode statistics), seeded reproducibly."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.monitor import Monitor

from ppo_platform.envs.vector import NativeVecEnv
from ppo_platform.envs.vector_autoreset import CartPoleSameStep, convertible, same_step

START_BOUND = 0.05  # CartPole's start states are uniform in [-0.05, 0.05]


def native(n_envs: int, **kwargs: Any) -> NativeVecEnv:
    return NativeVecEnv(
        gym.make_vec("CartPole-v1", n_envs, vectorization_mode="vector_entry_point", **kwargs)
    )


def run(env: Any, steps: int, seed: int) -> list[tuple[int, int, dict[str, Any], np.ndarray]]:
    """(step, env index, info, observation returned) of every episode end, random actions."""
    rng = np.random.default_rng(seed)
    env.seed(seed)
    env.reset()
    ends = []
    for step in range(steps):
        obs, rewards, dones, infos = env.step(rng.integers(0, 2, env.num_envs))
        assert rewards.dtype == np.float32 and dones.dtype == np.bool_
        ends += [(step, int(i), infos[i], obs[i].copy()) for i in np.flatnonzero(dones)]
    return ends


def test_an_ended_episode_returns_the_reset_observation_and_the_terminal_one_in_infos() -> None:
    ends = run(native(4), 300, seed=1)
    assert len(ends) > 20  # random actions end an episode every ~22 steps
    for _, _, info, obs in ends:
        terminal = info["terminal_observation"]
        assert np.all(np.abs(obs) <= START_BOUND)  # a fresh start, not the fallen pole
        # The pole fell (|angle| > 12 degrees) or the cart left the track.
        assert abs(terminal[2]) > 0.2094 or abs(terminal[0]) > 2.4
        assert info["TimeLimit.truncated"] is False


def test_episode_statistics_are_monitors_and_lengths_add_up() -> None:
    env = native(3)
    ends = run(env, 200, seed=2)
    for index in range(3):
        steps = [step for step, i, _, _ in ends if i == index]
        lengths = [info["episode"]["l"] for _, i, info, _ in ends if i == index]
        # Episode k of env i ends at step sum(lengths[:k+1]) - 1: no step is lost to resets.
        assert list(np.cumsum(lengths) - 1) == steps
        for _, _, info, _ in ends:
            assert info["episode"]["r"] == float(info["episode"]["l"])  # +1 per CartPole step
            assert set(info["episode"]) == {"r", "l", "t"}
    assert env.env_is_wrapped(Monitor) == [True] * 3  # evaluation reads Monitor's statistics


def test_a_time_limit_end_is_marked_truncated() -> None:
    ends = run(native(2, max_episode_steps=5), 12, seed=0)
    truncated = [info for _, _, info, _ in ends if info["TimeLimit.truncated"]]
    assert truncated and all(info["episode"]["l"] == 5 for info in truncated)


def test_the_same_seed_gives_the_same_episodes_and_another_seed_others() -> None:
    def lengths(seed: int) -> list[int]:
        return [info["episode"]["l"] for _, _, info, _ in run(native(4), 200, seed)]

    assert lengths(7) == lengths(7)
    assert lengths(7) != lengths(8)


def test_random_play_lasts_as_long_as_on_per_env_cartpoles() -> None:
    """Same dynamics: mean episode length of random play, native vs SB3's DummyVecEnv."""

    def mean_length(env: Any) -> float:
        return float(np.mean([info["episode"]["l"] for _, _, info, _ in run(env, 1500, 0)]))

    ours, theirs = mean_length(native(8)), mean_length(make_vec_env("CartPole-v1", 8, seed=0))
    assert ours == pytest.approx(22.3, abs=1.5) and theirs == pytest.approx(22.3, abs=1.5)


def test_only_envs_that_can_reset_in_the_same_step_are_converted() -> None:
    from gymnasium.envs.classic_control.cartpole import CartPoleVectorEnv

    env = gym.make_vec("CartPole-v1", 2, vectorization_mode="vector_entry_point")
    assert env.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP  # gymnasium's own
    assert isinstance(same_step(env), CartPoleSameStep)
    assert convertible(CartPoleVectorEnv)
    sync = gym.make_vec("CartPole-v1", 2, vectorization_mode="sync")
    assert not convertible(type(sync))
    with pytest.raises(ValueError, match="resets on the next step"):
        same_step(sync)
    same = gym.make_vec(
        "CartPole-v1",
        2,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP},
    )
    assert same_step(same) is same  # already SB3's convention: used as it is
    assert len(run(NativeVecEnv(same), 100, seed=0)) > 4
