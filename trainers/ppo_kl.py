"""PPO with an adaptive KL penalty instead of clipping (the "hard" lesson exercise:
docs/guides/lesson-exercises.md).

L = L_PG - beta * KL(pi_old || pi); after each update beta doubles when the update's KL was
above the target band and halves when it was below (`AdaptiveKLController`). Nothing is
clipped: the clip range only defines the reported clip fraction.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from torch import Tensor

from .losses import AdaptiveKLController, PolicyLossOutput, kl_penalty_policy_loss
from .ppo import ClipPPO
from .reporting import UpdateReportingMixin


class KLPenaltyPPO(ClipPPO):
    """Our PPO update with the KL-penalty objective and an adaptive beta (saved with the model)."""

    def __init__(
        self,
        *args: Any,
        kl_target: float = 0.01,
        kl_beta_init: float = 1.0,
        kl_rule: Literal["lesson", "paper"] = "lesson",
        **kwargs: Any,
    ) -> None:
        # Built first: it validates its arguments before SB3 allocates anything.
        self.kl_controller = AdaptiveKLController(kl_beta_init, kl_target, kl_rule)
        super().__init__(*args, **kwargs)

    def _excluded_save_params(self) -> list[str]:
        # Saved as plain data (`kl_state`) instead: a model.zip loads in stock SB3.
        return [*super()._excluded_save_params(), "kl_controller"]

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.kl_state = self.kl_controller.state()
        super().save(*args, **kwargs)

    def _setup_model(self) -> None:
        super()._setup_model()
        state = self.__dict__.pop("kl_state", None)  # set by `load` from the saved data
        if state is not None:
            self.kl_controller = AdaptiveKLController.from_state(state)

    def _policy_objective(
        self, log_prob: Tensor, old_log_prob: Tensor, advantages: Tensor, clip_epsilon: float
    ) -> PolicyLossOutput:
        return kl_penalty_policy_loss(
            log_prob,
            old_log_prob,
            advantages,
            beta=self.kl_controller.beta,
            clip_epsilon=clip_epsilon,
            validate=False,
        )

    def train(self) -> None:
        """One update with the current beta, then adapt beta to the KL it produced."""
        beta = self.kl_controller.beta
        super().train()
        self.logger.record("train/kl_beta", beta)  # the beta this update's metrics came from
        kl = float(self.logger.name_to_value["train/approx_kl"])
        # A non-finite KL is divergence: UpdateReportingMixin raises NonFiniteError for it.
        if math.isfinite(kl):
            self.kl_controller.update(kl)


class MonitoredKLPPO(UpdateReportingMixin, KLPenaltyPPO):
    """`algorithm: ppo_kl`: adaptive KL penalty; listeners get its metrics per update."""
