"""SB3 callbacks: periodic evaluation, periodic checkpoints, and per-rollout statistics of what
the env hands over (the doctor reads them: docs/guides/diagnostics.md)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecEnv, sync_envs_normalization

from trainers.errors import NonFiniteInputError
from trainers.evaluation import evaluate_episodes


class PeriodicEvalCallback(BaseCallback):
    """Evaluate every `every` env steps (0: never here; the caller evaluates at the end).

    With a `seed`, every evaluation starts the eval envs from the same seeds (see
    trainers.evaluation), so evaluations differ only by the policy weights.
    """

    def __init__(
        self,
        eval_env: VecEnv,
        every: int,
        episodes: int,
        deterministic: bool,
        on_eval: Callable[[int, float, float], None],
        seed: int | None = None,
    ) -> None:
        super().__init__()
        self.eval_env, self.every, self.episodes = eval_env, every, episodes
        self.deterministic, self.on_eval, self.seed = deterministic, on_eval, seed
        self.next_eval = 0
        self.last_eval_step: int | None = None

    def _on_training_start(self) -> None:
        self.next_eval = (self.num_timesteps // self.every + 1) * self.every if self.every else 0

    def _on_step(self) -> bool:
        if self.every and self.num_timesteps >= self.next_eval:
            self.next_eval += self.every * max(
                1, (self.num_timesteps - self.next_eval) // self.every + 1
            )
            self.evaluate()
        return True

    def evaluate(self) -> tuple[float, float]:
        """Run the evaluation episodes now (obs statistics synced from the training env)."""
        train_env = self.model.get_env()
        if train_env is not None:
            sync_envs_normalization(train_env, self.eval_env)
        rewards = evaluate_episodes(
            self.model, self.eval_env, self.episodes, self.deterministic, self.seed
        )
        mean, std = float(np.mean(rewards)), float(np.std(rewards))
        self.last_eval_step = self.num_timesteps
        self.on_eval(self.num_timesteps, mean, std)
        return mean, std


class PeriodicCheckpointCallback(BaseCallback):
    """Call `save(timesteps)` every `every` env steps."""

    def __init__(self, every: int, save: Callable[[int], None]) -> None:
        super().__init__()
        self.every, self.save = every, save
        self.next_save = 0

    def _on_training_start(self) -> None:
        self.next_save = (self.num_timesteps // self.every + 1) * self.every if self.every else 0

    def _on_step(self) -> bool:
        if self.every and self.num_timesteps >= self.next_save:
            self.next_save += self.every
            self.save(self.num_timesteps)
        return True


def _first_non_finite(values: np.ndarray) -> tuple[int, int | None, float] | None:
    """(env, element index or None, value) of the first NaN or infinite entry, row-major."""
    bad = np.argwhere(~np.isfinite(values))
    if len(bad) == 0:
        return None
    where = tuple(int(i) for i in bad[0])
    index = int(np.ravel_multi_index(where[1:], values.shape[1:])) if len(where) > 1 else None
    return where[0], index, float(values[where])


class RolloutStatsCallback(BaseCallback):
    """Per rollout: the largest |observation| and |reward|, and the share of sampled continuous
    actions outside the action bounds (`latest`, `rollout/*` names). A NaN or infinite
    observation or reward stops training at once with NonFiniteInputError, naming the env,
    the element index and the env step, before the policy ever sees it."""

    def __init__(self) -> None:
        super().__init__()
        self.latest: dict[str, float] = {}
        self._reward_max = 0.0

    def _check(self, what: str, values: object) -> None:
        if not isinstance(values, np.ndarray) or values.dtype.kind != "f":
            return  # integer pixels and the like cannot be NaN
        if not np.isfinite(values).all():
            env, index, value = _first_non_finite(values)  # type: ignore[misc]
            raise NonFiniteInputError(what, self.num_timesteps, env, index, value)

    def _on_rollout_start(self) -> None:
        self._check("observation", getattr(self.model, "_last_obs", None))
        self._reward_max = 0.0

    def _on_step(self) -> bool:
        self._check("observation", self.locals.get("new_obs"))
        rewards = self.locals.get("rewards")
        if isinstance(rewards, np.ndarray) and rewards.size:
            self._check("reward", rewards)
            self._reward_max = max(self._reward_max, float(np.abs(rewards).max()))
        return True

    def _on_rollout_end(self) -> None:
        buffer = getattr(self.model, "rollout_buffer", None)
        # Every observation and reward of the rollout was checked finite (else it stopped).
        stats = {
            "rollout/obs_nonfinite": 0.0,
            "rollout/reward_nonfinite": 0.0,
            "rollout/reward_abs_max": self._reward_max,
        }
        observations = getattr(buffer, "observations", None)
        if isinstance(observations, np.ndarray) and observations.dtype.kind == "f":
            stats["rollout/obs_abs_max"] = float(np.abs(observations).max())
        space = self.model.action_space
        actions = getattr(buffer, "actions", None)
        if isinstance(space, spaces.Box) and isinstance(actions, np.ndarray):
            outside = (actions < space.low) | (actions > space.high)
            stats["rollout/action_clip_fraction"] = float(outside.mean())
        self.latest = stats
