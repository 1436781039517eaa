"""Replaces SB3's `VecNormalize`: the same normalization with a cheaper running-statistics update
for one env.

`RunningMeanStd.update` takes `np.mean` and `np.var` of the batch, two reductions through
numpy's Python wrappers, twice per step (observations and returns): with one env that is most
of VecNormalize's cost. For a batch of one row the mean is the row and the variance is
(row - row)^2 (0, or NaN where the row is not finite), which is what numpy computes for it;
`LeanVecNormalize` hands those to SB3's own `update_from_moments`, so the statistics are equal
bit for bit. Saved, it is SB3's `VecNormalize` (stock SB3 loads the file).
"""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.vec_env import VecNormalize
from stable_baselines3.common.vec_env.base_vec_env import VecEnvStepReturn


def update_statistics(rms: RunningMeanStd, batch: Any) -> None:
    """`rms.update(batch)`, without numpy's reductions for a float batch of one row."""
    if not (isinstance(batch, np.ndarray) and batch.shape[:1] == (1,) and batch.dtype.kind == "f"):
        rms.update(batch)
        return
    mean = batch[0] / 1  # np.mean of one row: the row, in np.mean's result type
    deviation = mean - mean
    rms.update_from_moments(mean, deviation * deviation, 1)  # type: ignore[arg-type]


class LeanVecNormalize(VecNormalize):
    """`VecNormalize` whose running statistics are updated by `update_statistics`."""

    def step_wait(self) -> VecEnvStepReturn:
        """VecNormalize.step_wait, as it is but for the statistics' update."""
        obs, rewards, dones, infos = self.venv.step_wait()
        assert isinstance(obs, (np.ndarray, dict))  # for mypy
        self.old_obs = obs
        self.old_reward = rewards
        if self.training and self.norm_obs:
            if isinstance(obs, dict) and isinstance(self.obs_rms, dict):
                for key in self.obs_rms:
                    update_statistics(self.obs_rms[key], obs[key])
            else:
                update_statistics(self.obs_rms, obs)  # type: ignore[arg-type]
        obs = self.normalize_obs(obs)
        if self.training:
            self._update_reward(rewards)
        rewards = self.normalize_reward(rewards)
        for idx, done in enumerate(dones):
            if done and "terminal_observation" in infos[idx]:
                terminal = infos[idx]["terminal_observation"]
                infos[idx]["terminal_observation"] = self.normalize_obs(terminal)
        self.returns[dones] = 0
        return obs, rewards, dones, infos

    def _update_reward(self, reward: np.ndarray) -> None:
        self.returns = self.returns * self.gamma + reward
        update_statistics(self.ret_rms, self.returns)

    def save(self, save_path: str) -> None:
        """Pickled as SB3's own VecNormalize, with the same state."""
        stock = VecNormalize.__new__(VecNormalize)
        stock.__dict__.update(self.__dict__)
        with open(save_path, "wb") as file_handler:
            pickle.dump(stock, file_handler)
