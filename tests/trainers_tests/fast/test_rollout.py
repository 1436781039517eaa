"""ppo_platform.trainers.fast.algorithm's rollout collection and the fast policy's forward: bit for
bit the
rollout stock SB3 collects, on a per-env and on a native vector env, with the per-step
callbacks still called."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env

from ppo_platform.envs.vector import NativeVecEnv
from ppo_platform.trainers.fast.policy import FastActorCriticPolicy
from ppo_platform.trainers.ppo import PlatformPPO

FIELDS = ("observations", "actions", "rewards", "episode_starts", "values", "log_probs")
FIELDS += ("advantages", "returns")


class CountSteps(BaseCallback):
    def __init__(self) -> None:
        super().__init__()
        self.steps = 0

    def _on_step(self) -> bool:
        self.steps += 1
        assert self.locals["infos"] is not None  # what SB3 gives a callback per step
        return True


def env(kind: str, env_id: str) -> Any:
    if kind == "native":
        venv = NativeVecEnv(gym.make_vec(env_id, 4, vectorization_mode="vector_entry_point"))
        venv.seed(5)
        return venv
    return make_vec_env(env_id, n_envs=4, seed=5)


def collect(cls: type, kind: str, env_id: str) -> tuple[Any, CountSteps]:
    model = cls("MlpPolicy", env(kind, env_id), n_steps=64, seed=5, device="cpu")
    counter = CountSteps()
    _, callback = model._setup_learn(total_timesteps=10_000, callback=counter)
    for _ in range(3):  # several rollouts: episodes end and restart in between
        model.collect_rollouts(model.env, callback, model.rollout_buffer, model.n_steps)
    return model, counter


@pytest.mark.parametrize(
    ("kind", "env_id"),
    [("dummy", "CartPole-v1"), ("native", "CartPole-v1"), ("dummy", "Pendulum-v1")],
)
def test_the_lean_rollout_is_stock_sb3s_bit_for_bit(kind: str, env_id: str) -> None:
    stock, stock_steps = collect(PPO, kind, env_id)
    ours, our_steps = collect(PlatformPPO, kind, env_id)
    for name in FIELDS:
        theirs, mine = getattr(stock.rollout_buffer, name), getattr(ours.rollout_buffer, name)
        assert np.array_equal(theirs, mine), name
    assert our_steps.steps == stock_steps.steps == 3 * 64
    assert [e["r"] for e in ours.ep_info_buffer] == [e["r"] for e in stock.ep_info_buffer]
    assert ours.num_timesteps == stock.num_timesteps == 3 * 64 * 4
    assert "forward" not in vars(ours.policy)  # the policy's own class, no method swapped
    assert type(ours.policy) is FastActorCriticPolicy
