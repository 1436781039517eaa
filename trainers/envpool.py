"""An SB3 VecEnv over EnvPool (`pip install 'ppo-platform[envpool]'`): N copies stepped by
EnvPool's C++ threads, with SB3's conventions.

EnvPool resets an ended copy on its *next* step (that step ignores the action); here the ended
copies are stepped once more at once (`step(actions, env_id)` steps only them), so the step that
ends an episode already returns the next episode's first observation, the last one in
`infos[i]["terminal_observation"]`, as SB3 expects. For ALE games, `infos[i]["episode"]` holds
the game's score and length over all lives, as the platform's Monitor (placed before the atari
wrapper) records them: EnvPool reports the raw reward (`info["reward"]`) and the end of the game
(`info["terminated"]`) beside its clipped reward and life-loss episodes.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices, VecEnvStepReturn

ATARI_OPTION = "episodic_life"  # only ALE pools take it: their episodes are games


class EnvPoolVecEnv(VecEnv):
    """`envpool.make(task_id, num_envs=n_envs, seed=..., **options)` as an SB3 VecEnv. EnvPool
    seeds a pool when it is made, so a reset after `seed(s)` makes the pool anew with seed s.
    Episode lengths are counted in agent steps x `length_scale` (an ALE game's frame skip)."""

    def __init__(
        self, task_id: str, n_envs: int, options: Mapping[str, Any], length_scale: int = 1
    ) -> None:
        self.task_id, self.options, self.length_scale = task_id, dict(options), length_scale
        self.games = ATARI_OPTION in self.options
        self._returns = np.zeros(n_envs, dtype=np.float64)
        self._lengths = np.zeros(n_envs, dtype=np.int64)
        self.pool: Any = None
        self._make(0)
        self._start_time = time.time()
        self._actions: Any = None
        pool: Any = self.pool
        super().__init__(n_envs, pool.observation_space, pool.action_space)

    def _make(self, seed: int) -> None:
        import envpool

        if self.pool is not None:
            self.pool.close()
        self.pool = envpool.make(
            self.task_id,
            env_type="gymnasium",
            num_envs=len(self._returns),
            seed=seed,
            **self.options,
        )

    def reset(self) -> Any:
        if self._seeds[0] is not None:
            self._make(self._seeds[0])
        obs, _ = self.pool.reset()
        self._reset_seeds()
        self._returns[:] = 0
        self._lengths[:] = 0
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, terminated, truncated, info = self.pool.step(self._actions)
        dones = np.logical_or(terminated, truncated)
        self._returns += info["reward"] if self.games else rewards
        self._lengths += 1
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if not dones.any():
            return obs, np.asarray(rewards, dtype=np.float32), dones, infos
        ended = np.flatnonzero(dones)
        next_obs, *_, next_info = self.pool.step(self._actions[ended], ended.astype(np.int32))
        first = obs.copy()
        first[next_info["env_id"]] = next_obs
        # An ALE game ends at game over (or its time limit), not at a lost life.
        episode_ends = (info["terminated"].astype(bool) | truncated) if self.games else dones
        now = round(time.time() - self._start_time, 6)
        for i in ended:
            infos[i]["terminal_observation"] = obs[i]
            infos[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
            if episode_ends[i]:
                infos[i]["episode"] = {
                    "r": round(float(self._returns[i]), 6),
                    "l": int(self._lengths[i]) * self.length_scale,
                    "t": now,
                }
                self._returns[i], self._lengths[i] = 0, 0
        return first, np.asarray(rewards, dtype=np.float32), dones, infos

    def close(self) -> None:
        self.pool.close()

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None] * self.num_envs

    def _count(self, indices: VecEnvIndices) -> int:
        return len(list(self._get_indices(indices)))

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """One pool holds every copy: its attribute (None if it has none), once per index."""
        return [getattr(self.pool, attr_name, None)] * self._count(indices)

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        setattr(self.pool, attr_name, value)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **kwargs: Any
    ) -> list[Any]:
        result = getattr(self.pool, method_name)(*method_args, **kwargs)
        return [result] * self._count(indices)

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        """Monitor's episode statistics are given here, so evaluation reads them as Monitor's."""
        return [issubclass(Monitor, wrapper_class)] * self._count(indices)
