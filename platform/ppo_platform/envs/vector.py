"""SB3 VecEnvs over gymnasium's native vector envs: one env object steps all N copies at once
(CartPole's `CartPoleVectorEnv` steps N poles with a handful of numpy operations).

SB3 expects, on the step where an episode ends, the first observation of the next episode, the
last one in `infos[i]["terminal_observation"]`, `infos[i]["TimeLimit.truncated"]` for a
time-limit end, and (from its `Monitor`) `infos[i]["episode"] = {"r", "l", "t"}`.
`NativeVecEnv` gives exactly that from a gymnasium vector env made same-step
(`ppo_platform.envs.vector_autoreset`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices, VecEnvStepReturn

from ppo_platform.envs.vector_autoreset import FINAL_KEYS, same_step


def _step_infos(info: dict[str, Any], n_envs: int) -> list[dict[str, Any]]:
    """gymnasium's dict of arrays (with `_key` masks) as SB3's list of per-env dicts."""
    infos: list[dict[str, Any]] = [{} for _ in range(n_envs)]
    for key, values in info.items():
        if key in FINAL_KEYS or key.startswith("_"):
            continue
        mask = info.get(f"_{key}")
        for i in range(n_envs):
            if mask is None or mask[i]:
                infos[i][key] = values[i]
    return infos


class OneObjectVecEnv(VecEnv):
    """A VecEnv whose N copies live in one object, `self.inner`, with SB3's Monitor statistics:
    `_count_step` adds a step's rewards, `_episode` closes copy i's episode."""

    inner: Any

    def _start_statistics(self, n_envs: int) -> None:
        self._returns = np.zeros(n_envs, dtype=np.float64)
        self._lengths = np.zeros(n_envs, dtype=np.int64)
        self._start_time = time.time()
        self._actions: Any = None

    def _count_step(self, rewards: np.ndarray) -> None:
        self._returns += rewards
        self._lengths += 1

    def _episode(self, i: Any, length_scale: int = 1) -> dict[str, float]:
        """Monitor's `{"r", "l", "t"}` of copy i's episode, which starts anew."""
        episode = {
            "r": round(float(self._returns[i]), 6),
            "l": int(self._lengths[i]) * length_scale,
            "t": round(time.time() - self._start_time, 6),
        }
        self._returns[i], self._lengths[i] = 0, 0
        return episode

    def _started(self, obs: Any) -> Any:
        """After a reset: seeds used, every copy's episode starts at 0."""
        self._reset_seeds()
        self._returns[:] = 0
        self._lengths[:] = 0
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def close(self) -> None:
        self.inner.close()

    def _count(self, indices: VecEnvIndices) -> int:
        return len(list(self._get_indices(indices)))

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """One object holds every copy: its attribute (None if it has none), once per index."""
        return [getattr(self.inner, attr_name, None)] * self._count(indices)

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        setattr(self.inner, attr_name, value)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **kwargs: Any
    ) -> list[Any]:
        result = getattr(self.inner, method_name)(*method_args, **kwargs)
        return [result] * self._count(indices)

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        """Monitor's episode statistics are given here, so evaluation reads them as Monitor's."""
        return [issubclass(Monitor, wrapper_class)] * self._count(indices)


class NativeVecEnv(OneObjectVecEnv):
    """SB3 `VecEnv` over a same-step gymnasium `VectorEnv` (see `same_step`), with Monitor's
    episode statistics. `seed(s)` makes the next reset seed the vector env with `s`."""

    def __init__(self, env: VectorEnv) -> None:
        self.inner = same_step(env)
        self._start_statistics(env.num_envs)
        super().__init__(env.num_envs, env.single_observation_space, env.single_action_space)

    def reset(self) -> Any:
        options = self._options[0] or None
        obs, info = self.inner.reset(seed=self._seeds[0], options=options)
        self.reset_infos = _step_infos(info, self.num_envs)
        self._reset_options()
        return self._started(obs)

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, terminated, truncated, info = self.inner.step(self._actions)
        dones = np.logical_or(terminated, truncated)
        self._count_step(rewards)
        infos = _step_infos(info, self.num_envs)
        if dones.any():
            final = info["final_obs"]
            for i in np.flatnonzero(dones):
                infos[i]["terminal_observation"] = final[i]
                infos[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
                infos[i]["episode"] = self._episode(i)
        return obs, np.asarray(rewards, dtype=np.float32), dones, infos

    def get_images(self) -> Sequence[np.ndarray | None]:
        images: Any = self.inner.render()
        return list(images) if images is not None else [None] * self.num_envs
