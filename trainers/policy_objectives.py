"""The policy term of our PPO update, as an object the trainer holds (`model.objective`): the
clipped surrogate (`algorithm: ppo`) or the adaptive KL penalty (`algorithm: ppo_kl`, the
"hard" lesson exercise: docs/guides/lesson-exercises.md).

A new objective is a class with `loss`, `after_update` and `state`; the update loop, the hooks
and the fast paths stay as they are.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal, Protocol

from torch import Tensor

from .losses import (
    AdaptiveKLController,
    PolicyLossOutput,
    clipped_policy_loss,
    kl_penalty_policy_loss,
)


class PolicyObjective(Protocol):
    # True only for the clipped surrogate, whose gradients the fast paths compute by hand.
    manual_gradients: bool

    def loss(
        self, log_prob: Tensor, old_log_prob: Tensor, advantages: Tensor, clip_epsilon: float
    ) -> PolicyLossOutput: ...

    def after_update(self, logged: Mapping[str, Any]) -> dict[str, float]:
        """Adapt to the update just taken (its logged metrics); metrics to add to it."""
        ...

    def state(self) -> dict[str, Any] | None:
        """What a saved model keeps of it, as plain data (None: nothing)."""
        ...


class ClipObjective:
    """-E[min(r A, clip(r, 1 - eps, 1 + eps) A)]."""

    manual_gradients = True

    def loss(
        self, log_prob: Tensor, old_log_prob: Tensor, advantages: Tensor, clip_epsilon: float
    ) -> PolicyLossOutput:
        return clipped_policy_loss(
            log_prob, old_log_prob, advantages, clip_epsilon=clip_epsilon, validate=False
        )

    def after_update(self, logged: Mapping[str, Any]) -> dict[str, float]:
        return {}

    def state(self) -> dict[str, Any] | None:
        return None


class KLPenaltyObjective:
    """L = L_PG - beta * KL(pi_old || pi); after each update beta doubles when the update's KL
    was above the target band and halves when it was below (`AdaptiveKLController`). Nothing is
    clipped: the clip range only defines the reported clip fraction."""

    manual_gradients = False

    def __init__(self, controller: AdaptiveKLController) -> None:
        self.controller = controller

    @classmethod
    def adaptive(
        cls,
        target: float = 0.01,
        beta_init: float = 1.0,
        rule: Literal["lesson", "paper"] = "lesson",
    ) -> KLPenaltyObjective:
        return cls(AdaptiveKLController(beta_init, target, rule))

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> KLPenaltyObjective:
        return cls(AdaptiveKLController.from_state(state))

    def loss(
        self, log_prob: Tensor, old_log_prob: Tensor, advantages: Tensor, clip_epsilon: float
    ) -> PolicyLossOutput:
        return kl_penalty_policy_loss(
            log_prob,
            old_log_prob,
            advantages,
            beta=self.controller.beta,
            clip_epsilon=clip_epsilon,
            validate=False,
        )

    def after_update(self, logged: Mapping[str, Any]) -> dict[str, float]:
        """The beta this update's metrics came from; then beta adapted to the KL it produced."""
        beta = self.controller.beta
        kl = float(logged["train/approx_kl"])
        # A non-finite KL is divergence: the trainer's UpdateHooks raise NonFiniteError for it.
        if math.isfinite(kl):
            self.controller.update(kl)
        return {"train/kl_beta": beta}

    def state(self) -> dict[str, Any] | None:
        return self.controller.state()
