"""How an SB3 on-policy algorithm runs with its fast paths on or off: `FastPathStrategy`, an
object the trainer holds (`model.fast_paths`), not a base class.

At model set-up (a new model, or one loaded from a file) the trainer reads the switch
(`ppo_platform.trainers.fast.switch`) once into its strategy. With the fast paths on:

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

from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

import torch

from .distributions import distribution_checks_off
from .optimizer_step import use_foreach_optimizer
from .policy import fast_policy_class, stock_policy_class
from .switch import FastPaths, fast_paths


@dataclass(frozen=True)
class FastPathStrategy:
    """The fast paths' choices for one model: which policy class, which optimizer kernels, and
    the contexts its rollouts and updates run in."""

    paths: FastPaths

    @classmethod
    def current(cls) -> FastPathStrategy:
        return cls(fast_paths())

    @property
    def on(self) -> bool:
        return self.paths.on

    def describe(self) -> str:
        return self.paths.describe()

    @classmethod
    def set_up(cls, model: Any, set_up_model: Callable[[], None]) -> FastPathStrategy:
        """The switch read once for `model`, whose SB3 set-up (`set_up_model`) then builds the
        policy class it picks; the strategy to keep as `model.fast_paths`."""
        strategy = cls.current()
        model.policy_class = strategy.policy_class(model.policy_class)
        set_up_model()
        strategy.after_setup(model.policy)
        return strategy

    def policy_class(self, policy_class: Any) -> Any:
        """The class to build: the fast subclass, or the stock class (a model loaded in a process
        whose fast paths are off)."""
        return fast_policy_class(policy_class) if self.on else stock_policy_class(policy_class)

    def after_setup(self, policy: Any) -> None:
        if self.on:
            use_foreach_optimizer(policy.optimizer)

    @contextmanager
    def rollout(self) -> Iterator[None]:
        if not self.on:
            yield
            return
        with distribution_checks_off(), torch.inference_mode():
            yield

    def update(self) -> Any:
        return distribution_checks_off() if self.on else nullcontext()


@contextmanager
def saving_as_stock(model: Any) -> Iterator[None]:
    """While `model` saves: its policy class is the stock one, so the model.zip names it and
    stock SB3 loads the file."""
    policy_class = model.policy_class
    model.policy_class = stock_policy_class(policy_class)
    try:
        yield
    finally:
        model.policy_class = policy_class
