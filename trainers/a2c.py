"""A2C baseline: stable-baselines3's A2C, one gradient step per rollout, reported like our PPO.

The update is SB3's, step for step; it also records the loss and the gradient norm before
clipping, names the policy term `train/policy_gradient_loss` like PPO does, and reads every
statistic back in one transfer. A2C has no ratio, so no KL, clip fraction or ratio quantiles.
It holds the same parts as `PlatformPPO`: the fast paths' strategy and the update hooks.
"""

from __future__ import annotations

from typing import Any

import torch
from gymnasium import spaces
from stable_baselines3 import A2C
from torch.nn import functional as F

from .fast.algorithm import FastPathStrategy, saving_as_stock
from .ppo import rollout_statistics
from .reporting import StopCondition, UpdateHooks, UpdateListener


class PlatformA2C(A2C):
    """`algorithm: a2c`: SB3 A2C whose update also reports loss and gradient norm, under PPO's
    metric names; listeners get its metrics per update."""

    fast_paths: FastPathStrategy
    n_updates_done: int = 0

    def __init__(
        self, *args: Any, update_listeners: list[UpdateListener] | None = None, **kwargs: Any
    ) -> None:
        self.update_hooks = UpdateHooks(update_listeners)
        super().__init__(*args, **kwargs)

    def add_update_listener(self, listener: UpdateListener) -> None:
        self.update_hooks.listeners.append(listener)

    def set_stop_condition(self, condition: StopCondition | None) -> None:
        self.update_hooks.stop_condition = condition

    def stop_requested(self) -> bool:
        return self.update_hooks.stop_requested()

    def _setup_model(self) -> None:
        self.fast_paths = FastPathStrategy.set_up(self, super()._setup_model)

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "fast_paths", "update_hooks"]

    def save(self, *args: Any, **kwargs: Any) -> None:
        """SB3's save, naming the stock policy class (stock SB3 loads the file)."""
        with saving_as_stock(self):
            super().save(*args, **kwargs)

    def collect_rollouts(self, *args: Any, **kwargs: Any) -> bool:
        if self.update_hooks.stop_requested():
            return False
        with self.fast_paths.rollout():
            return super().collect_rollouts(*args, **kwargs)

    def train(self) -> None:
        self.update_hooks.run_update(self, self._update)

    def _update(self) -> None:
        with self.fast_paths.update():
            self._train()

    def _train(self) -> None:
        """One gradient step on the whole rollout (SB3's A2C update)."""
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        discrete = isinstance(self.action_space, spaces.Discrete)
        # batch_size=None: the whole rollout in a single batch, so this loop runs once.
        for batch in self.rollout_buffer.get(batch_size=None):
            actions = batch.actions.long().flatten() if discrete else batch.actions
            values, log_prob, entropy = self.policy.evaluate_actions(batch.observations, actions)
            values = values.flatten()
            advantages = batch.advantages
            if self.normalize_advantage:
                advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
            policy_loss = -(advantages * log_prob).mean()
            value_loss = F.mse_loss(batch.returns, values)
            entropy_loss = -torch.mean(-log_prob) if entropy is None else -torch.mean(entropy)
            loss = policy_loss + self.ent_coef * entropy_loss + self.vf_coef * value_loss
            self.policy.optimizer.zero_grad()
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
            self.policy.optimizer.step()

        self._n_updates += 1
        named = {
            "train/policy_gradient_loss": policy_loss.detach(),
            "train/value_loss": value_loss.detach(),
            "train/entropy_loss": entropy_loss.detach(),
            "train/loss": loss.detach(),
            "train/grad_norm": grad_norm,
            **rollout_statistics(self.rollout_buffer, self.policy),
        }
        values_read = torch.stack([v.to(torch.float64) for v in named.values()]).tolist()
        for key, value in zip(named, values_read, strict=True):
            self.logger.record(key, value)
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
