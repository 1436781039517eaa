"""SB3 callbacks: periodic evaluation and periodic checkpoints."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecEnv, sync_envs_normalization

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
