"""RolloutStatsCallback: per-rollout ranges of what the env hands over, and a NaN observation
or reward stops training naming the env, the element index and the env step."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3 import PPO

from ppo_platform.trainers.callbacks import RolloutStatsCallback
from ppo_platform.trainers.errors import NonFiniteInputError


def test_pendulum_rollouts_report_observation_reward_and_action_ranges() -> None:
    stats = RolloutStatsCallback()
    model = PPO("MlpPolicy", "Pendulum-v1", n_steps=64, batch_size=64, n_epochs=1, seed=0)
    model.learn(128, callback=stats)
    latest = stats.latest
    assert 0.0 < latest["rollout/obs_abs_max"] <= 8.0  # Pendulum's bounds: cos, sin, 8 rad/s
    assert 0.0 < latest["rollout/reward_abs_max"] <= 16.3  # -(pi^2 + 0.1 * 8^2 + 0.001 * 2^2)
    assert 0.0 <= latest["rollout/action_clip_fraction"] <= 1.0
    assert latest["rollout/obs_nonfinite"] == latest["rollout/reward_nonfinite"] == 0.0


class NanAfter(gym.Wrapper):  # type: ignore[type-arg]
    def __init__(self, env: gym.Env, what: str, after: int) -> None:  # type: ignore[type-arg]
        super().__init__(env)
        self.what, self.after, self.steps = what, after, 0

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.steps += 1
        if self.steps >= self.after and self.what == "observation":
            obs = obs.copy()
            obs[3] = np.nan
        if self.steps >= self.after and self.what == "reward":
            reward = np.inf
        return obs, reward, terminated, truncated, info


@pytest.mark.parametrize(("what", "index"), [("observation", 3), ("reward", None)])
def test_a_non_finite_value_stops_training_naming_where(what: str, index: int | None) -> None:
    env = NanAfter(gym.make("CartPole-v1", max_episode_steps=1000), what, after=50)
    model = PPO("MlpPolicy", env, n_steps=32, batch_size=32, n_epochs=1, seed=0)
    with pytest.raises(NonFiniteInputError) as caught:
        model.learn(256, callback=RolloutStatsCallback())
    error = caught.value
    assert (error.what, error.index, error.env_index) == (what, index, 0)
    # The wrapper counts steps across episodes, as the env step does (one env).
    assert error.step == 50 and "at env step 50" in str(error)
