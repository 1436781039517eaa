"""Where an SB3 on-policy algorithm turns its fast paths on or off: `FastPathsMixin`.

At model set-up (a new model, or one loaded from a file) it reads the switch
(`ppo_platform.trainers.fast.switch`) once and keeps the answer in `fast_paths`. With the fast
paths on:

- the policy is `ppo_platform.trainers.fast.policy`'s subclass of the stock class (replaces SB3's
  `ActorCriticPolicy` and its siblings; a saved model.zip names the stock class);
- the optimizer updates all parameters per kernel (`foreach`, same arithmetic as torch's CPU
  default);
- `collect_rollouts` (replaces SB3's `OnPolicyAlgorithm.collect_rollouts`'s `no_grad`) runs in
  `inference_mode`, which also skips version counters and view tracking, with
  torch.distributions' checks off: the same kernels in the same order and the same random
  draws, so the rollout buffer is bit for bit what stock SB3 collects;
- `train` runs the update (`_train`) with torch.distributions' checks off.

With them off every one of these is SB3's and torch's own.
"""

from __future__ import annotations

from typing import Any

import torch

from .distributions import distribution_checks_off
from .optimizer_step import use_foreach_optimizer
from .policy import fast_policy_class, stock_policy_class
from .switch import FastPaths, fast_paths


class FastPathsMixin:
    """For an SB3 on-policy algorithm whose update lives in `_train()`."""

    fast_paths: FastPaths

    def _setup_model(self) -> None:
        self.fast_paths = fast_paths()
        self.policy_class: Any
        if self.fast_paths.on:
            self.policy_class = fast_policy_class(self.policy_class)
        else:  # a model loaded in a process whose fast paths are off
            self.policy_class = stock_policy_class(self.policy_class)
        super()._setup_model()  # type: ignore[misc]
        if self.fast_paths.on:
            use_foreach_optimizer(self.policy.optimizer)  # type: ignore[attr-defined]

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "fast_paths"]  # type: ignore[misc]

    def save(self, *args: Any, **kwargs: Any) -> None:
        """SB3's save, naming the stock policy class: stock SB3 loads the file."""
        policy_class = self.policy_class
        self.policy_class = stock_policy_class(policy_class)
        try:
            super().save(*args, **kwargs)  # type: ignore[misc]
        finally:
            self.policy_class = policy_class

    def collect_rollouts(self, *args: Any, **kwargs: Any) -> bool:
        if not self.fast_paths.on:
            return super().collect_rollouts(*args, **kwargs)  # type: ignore[misc, no-any-return]
        with distribution_checks_off(), torch.inference_mode():
            return super().collect_rollouts(*args, **kwargs)  # type: ignore[misc, no-any-return]

    def train(self) -> None:
        if not self.fast_paths.on:
            self._train()
            return
        with distribution_checks_off():
            self._train()

    def _train(self) -> None:
        raise NotImplementedError
