"""SB3 callbacks: periodic evaluation, periodic checkpoints, and per-rollout statistics of what
the env hands over (the doctor reads them: docs/guides/diagnostics.md)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecEnv, sync_envs_normalization

from ppo_platform.trainers.errors import NonFiniteInputError
from ppo_platform.trainers.evaluation import evaluate_episodes


class PeriodicEvalCallback(BaseCallback):
    """Evaluate every `every` env steps (0: never here; the caller evaluates at the end).

    With a `seed`, every evaluation starts the eval envs from the same seeds (see
    ppo_platform.trainers.evaluation), so evaluations differ only by the policy weights.
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
    observation stops training at once (before the policy sees it), a NaN or infinite reward
    at the rollout's end (before the update), with NonFiniteInputError naming the env, the
    element index and the env step. Per env step only the observations are checked: one
    vectorized test (docs/guides/diagnostics.md, "Per-rollout statistics")."""

    def __init__(self) -> None:
        super().__init__()
        self.latest: dict[str, float] = {}
        self._float_obs = False
        self._rollout_start = 0

    def _check(self, what: str, values: np.ndarray, step: int) -> None:
        if not np.isfinite(values).all():
            env, index, value = _first_non_finite(values)  # type: ignore[misc]
            raise NonFiniteInputError(what, step, env, index, value)

    def _on_rollout_start(self) -> None:
        last = getattr(self.model, "_last_obs", None)
        # Integer pixels cannot be NaN; dict observations are not checked.
        self._float_obs = isinstance(last, np.ndarray) and last.dtype.kind == "f"
        if self._float_obs:
            self._check("observation", last, self.num_timesteps)  # type: ignore[arg-type]
        self._rollout_start = self.num_timesteps

    def _on_step(self) -> bool:
        if self._float_obs:
            obs = self.locals["new_obs"]
            # NaN and infinity survive a sum (one reduction, the cheapest test); a sum that
            # overflowed on finite values is cleared by the exact test.
            if not math.isfinite(np.add.reduce(obs, axis=None, dtype=np.float64)):
                self._check("observation", obs, self.num_timesteps)
        return True

    def _rewards(self, rewards: np.ndarray) -> float:
        """The largest |reward| of the rollout (SB3 adds the bootstrapped value to a time-limit
        step's reward); NonFiniteInputError at the first non-finite one."""
        if not np.isfinite(rewards).all():
            t, env = (int(i) for i in np.argwhere(~np.isfinite(rewards))[0])
            step = self._rollout_start + (t + 1) * rewards.shape[1]
            raise NonFiniteInputError("reward", step, env, None, float(rewards[t, env]))
        return float(np.abs(rewards).max())

    def _on_rollout_end(self) -> None:
        buffer = getattr(self.model, "rollout_buffer", None)
        stats = {"rollout/obs_nonfinite": 0.0, "rollout/reward_nonfinite": 0.0}
        rewards = getattr(buffer, "rewards", None)
        if isinstance(rewards, np.ndarray) and rewards.ndim == 2:
            stats["rollout/reward_abs_max"] = self._rewards(rewards)
        observations = getattr(buffer, "observations", None)
        if isinstance(observations, np.ndarray) and observations.dtype.kind == "f":
            stats["rollout/obs_abs_max"] = float(np.abs(observations).max())
        space = self.model.action_space
        actions = getattr(buffer, "actions", None)
        if isinstance(space, spaces.Box) and isinstance(actions, np.ndarray):
            outside = (actions < space.low) | (actions > space.high)
            stats["rollout/action_clip_fraction"] = float(outside.mean())
        # Every observation and reward of the rollout was finite (else it stopped): 0 counts.
        self.latest = stats
