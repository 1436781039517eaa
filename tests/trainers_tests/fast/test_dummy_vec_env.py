"""ppo_platform.trainers.fast.dummy_vec_env: SB3's DummyVecEnv step for step, infos equal and still
copies."""

from __future__ import annotations

import numpy as np
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv

from ppo_platform.trainers.fast.dummy_vec_env import LeanDummyVecEnv, copy_info


def test_steps_and_infos_are_dummy_vec_envs() -> None:
    envs = [
        make_vec_env("CartPole-v1", n_envs=2, seed=3, vec_env_cls=c)
        for c in (DummyVecEnv, LeanDummyVecEnv)
    ]
    for env in envs:
        env.reset()
    rng = np.random.default_rng(0)
    ends = 0
    for _ in range(300):
        actions = rng.integers(0, 2, size=2)
        (obs, rew, done, infos), (obs2, rew2, done2, infos2) = (e.step(actions) for e in envs)
        assert np.array_equal(obs, obs2) and np.array_equal(rew, rew2)
        assert np.array_equal(done, done2)
        for info, info2 in zip(infos, infos2, strict=True):
            assert info.keys() == info2.keys()
            for key, value in info.items():
                if key == "episode":  # Monitor's wall-clock "t" differs between two envs
                    assert (value["r"], value["l"]) == (info2[key]["r"], info2[key]["l"])
                else:
                    assert np.array_equal(value, info2[key]), key
        ends += int(done.sum())
    assert ends > 10  # episodes ended: terminal observations and Monitor's statistics compared


def test_mutable_values_are_copied_and_scalars_kept() -> None:
    episode = {"r": 1.0, "l": 3}
    observation = np.zeros(3)
    info = {
        "x": np.float64(2.0),
        "TimeLimit.truncated": False,
        "episode": episode,
        "terminal_observation": observation,
    }
    copied = copy_info(info)
    assert copied == {**info, "terminal_observation": copied["terminal_observation"]}
    assert copied is not info
    assert copied["episode"] is not episode and copied["episode"] == episode
    assert copied["terminal_observation"] is not observation
    assert np.array_equal(copied["terminal_observation"], observation)
