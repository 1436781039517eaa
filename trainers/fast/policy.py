"""Replaces SB3's actor-critic policy classes while the fast paths are on; saves as them.

`FastActorCriticPolicy` (and its CNN and Dict-observation siblings) is SB3's class with two
differences, both without a change to any number:

- `forward` without gradients (the rollout's one call per env step) runs
`ppo_platform.trainers.fast.manual`'s
  forward for a policy it covers exactly: the same kernels and the same random draw as torch's
  Categorical or Normal, without the modules' and the distribution's Python.
- its optimizer is built by `ppo_platform.trainers.fast.compiler_free`, so that building and saving
it does
  not import torch's compiler.

It adds no parameter and no state: `ppo_platform.trainers.fast.algorithm` records the stock class
in a saved
model.zip (`stock_policy_class`), so stock SB3 loads the file and gets its own class.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

import torch
from stable_baselines3.common.policies import (
    ActorCriticCnnPolicy,
    ActorCriticPolicy,
    MultiInputActorCriticPolicy,
)
from stable_baselines3.common.type_aliases import Schedule

from .compiler_free import build_compiler_free
from .manual import ManualLoss

_UNBUILT = object()


class FastPolicyMixin:
    """For an SB3 `ActorCriticPolicy` class: the manual rollout forward, a compiler-free
    optimizer."""

    stock_class: ClassVar[type[ActorCriticPolicy]]
    optimizer_class: type[torch.optim.Optimizer]

    def _build(self, lr_schedule: Schedule) -> None:
        stock = self.optimizer_class
        self.optimizer_class = functools.partial(build_compiler_free, stock)  # type: ignore[assignment]
        try:
            super()._build(lr_schedule)  # type: ignore[misc]
        finally:
            self.optimizer_class = stock

    def forward(
        self, obs: torch.Tensor, deterministic: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """SB3's forward; without gradients, `ManualLoss.forward` where it covers the policy."""
        if not torch.is_grad_enabled():
            manual = self.__dict__.get("_rollout_manual", _UNBUILT)
            if manual is _UNBUILT:  # the layers are fixed once built: looked at once
                manual = self.__dict__["_rollout_manual"] = ManualLoss.build(self)  # type: ignore[arg-type]
            if manual is not None:
                return manual.forward(obs, deterministic)  # type: ignore[union-attr]
        return super().forward(obs, deterministic)  # type: ignore[misc, no-any-return]


class FastActorCriticPolicy(FastPolicyMixin, ActorCriticPolicy):
    """`MlpPolicy` with the fast paths on."""

    stock_class = ActorCriticPolicy


class FastActorCriticCnnPolicy(FastPolicyMixin, ActorCriticCnnPolicy):
    """`CnnPolicy` with the fast paths on."""

    stock_class = ActorCriticCnnPolicy


class FastMultiInputActorCriticPolicy(FastPolicyMixin, MultiInputActorCriticPolicy):
    """`MultiInputPolicy` with the fast paths on."""

    stock_class = MultiInputActorCriticPolicy


FAST_POLICIES: dict[type, type] = {
    fast.stock_class: fast
    for fast in (FastActorCriticPolicy, FastActorCriticCnnPolicy, FastMultiInputActorCriticPolicy)
}


def fast_policy_class(policy_class: Any) -> Any:
    """The fast class of a stock SB3 actor-critic class; any other class as it is."""
    return FAST_POLICIES.get(policy_class, policy_class)


def stock_policy_class(policy_class: Any) -> Any:
    """The stock SB3 class a fast policy class replaces; any other class as it is."""
    return policy_class.__dict__.get("stock_class", policy_class)
