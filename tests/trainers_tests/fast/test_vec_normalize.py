"""ppo_platform.trainers.fast.vec_normalize: VecNormalize's statistics and outputs bit for bit,
saved as
SB3's."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.vec_env import VecNormalize

from ppo_platform.trainers.fast.vec_normalize import LeanVecNormalize, update_statistics


@pytest.mark.parametrize("shape", [(1, 5), (1,), (3, 5)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_update_is_running_mean_stds_bit_for_bit(shape: tuple, dtype: type) -> None:
    rng = np.random.default_rng(0)
    stock, lean = RunningMeanStd(shape=shape[1:]), RunningMeanStd(shape=shape[1:])
    for _ in range(50):
        batch = (rng.normal(size=shape) * 10).astype(dtype)
        stock.update(batch)
        update_statistics(lean, batch)
    assert np.array_equal(stock.mean, lean.mean) and np.array_equal(stock.var, lean.var)
    assert stock.count == lean.count
    with np.errstate(invalid="ignore"):
        stock.update(np.full(shape, np.inf, dtype))  # not finite: NaN as numpy's var gives
        update_statistics(lean, np.full(shape, np.inf, dtype))
    assert np.array_equal(stock.var, lean.var, equal_nan=True)


def test_steps_are_vec_normalizes_and_the_file_is_stock_sb3s(tmp_path) -> None:  # type: ignore[no-untyped-def]
    envs = [
        cls(make_vec_env("Pendulum-v1", n_envs=1, seed=2), gamma=0.9)
        for cls in (VecNormalize, LeanVecNormalize)
    ]
    for env in envs:
        env.reset()
    rng = np.random.default_rng(1)
    for _ in range(450):  # two episode ends: terminal observations normalized too
        action = rng.uniform(-2, 2, size=(1, 1)).astype(np.float32)
        (obs, rew, done, infos), (obs2, rew2, done2, infos2) = (e.step(action) for e in envs)
        assert np.array_equal(obs, obs2) and np.array_equal(rew, rew2)
        assert np.array_equal(done, done2)
        if done[0]:
            assert np.array_equal(
                infos[0]["terminal_observation"], infos2[0]["terminal_observation"]
            )
    stock, lean = envs
    for name in ("obs_rms", "ret_rms"):
        ours, theirs = getattr(lean, name), getattr(stock, name)
        assert np.array_equal(ours.mean, theirs.mean) and np.array_equal(ours.var, theirs.var)
    lean.save(str(tmp_path / "stats.pkl"))
    with open(tmp_path / "stats.pkl", "rb") as file:
        loaded = pickle.load(file)
    assert type(loaded) is VecNormalize  # stock SB3 loads it without this package
    assert np.array_equal(loaded.obs_rms.var, lean.obs_rms.var)
    assert type(lean) is LeanVecNormalize  # saving changed nothing in the env itself
