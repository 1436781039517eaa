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

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnvStepReturn

from ppo_platform.envs.vector import OneObjectVecEnv
from ppo_platform.trainers.quiet_imports import import_keeping_numpy_rng

ATARI_OPTION = "episodic_life"  # only ALE pools take it: their episodes are games


class EnvPoolVecEnv(OneObjectVecEnv):
    """`envpool.make(task_id, num_envs=n_envs, seed=..., **options)` as an SB3 VecEnv. EnvPool
    seeds a pool when it is made, so a reset after `seed(s)` makes the pool anew with seed s.
    Episode lengths are counted in agent steps x `length_scale` (an ALE game's frame skip)."""

    def __init__(
        self, task_id: str, n_envs: int, options: Mapping[str, Any], length_scale: int = 1
    ) -> None:
        self.task_id, self.options, self.length_scale = task_id, dict(options), length_scale
        self.games = ATARI_OPTION in self.options
        self._start_statistics(n_envs)
        self.inner = None
        self._make(0)
        super().__init__(n_envs, self.inner.observation_space, self.inner.action_space)

    def _make(self, seed: int) -> None:
        envpool = import_keeping_numpy_rng("envpool")
        if self.inner is not None:
            self.inner.close()
        self.inner = envpool.make(
            self.task_id,
            env_type="gymnasium",
            num_envs=len(self._returns),
            seed=seed,
            **self.options,
        )

    def reset(self) -> Any:
        if self._seeds[0] is not None:
            self._make(self._seeds[0])
        obs, _ = self.inner.reset()
        return self._started(obs)

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, terminated, truncated, info = self.inner.step(self._actions)
        dones = np.logical_or(terminated, truncated)
        self._count_step(info["reward"] if self.games else rewards)
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if not dones.any():
            return obs, np.asarray(rewards, dtype=np.float32), dones, infos
        ended = np.flatnonzero(dones)
        next_obs, *_, next_info = self.inner.step(self._actions[ended], ended.astype(np.int32))
        first = obs.copy()
        first[next_info["env_id"]] = next_obs
        # An ALE game ends at game over (or its time limit), not at a lost life.
        episode_ends = (info["terminated"].astype(bool) | truncated) if self.games else dones
        for i in ended:
            infos[i]["terminal_observation"] = obs[i]
            infos[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
            if episode_ends[i]:
                infos[i]["episode"] = self._episode(i, self.length_scale)
        return first, np.asarray(rewards, dtype=np.float32), dones, infos

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None] * self.num_envs
