"""Report each update's diagnostics the moment it is computed, and stop on non-finite values.

Stock SB3 dumps the train/* metrics at the start of the *next* iteration; listeners registered
here see them right after the update that produced them.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import torch

from .diagnostics import non_finite_metrics
from .errors import NonFiniteError

UpdateListener = Callable[[Any, dict[str, float]], None]

# Only loss-like metrics decide divergence: e.g. explained variance is legitimately NaN when
# the returns of a rollout have zero variance.
_FINITE_REQUIRED = (
    "train/loss",
    "train/value_loss",
    "train/policy_gradient_loss",
    "train/entropy_loss",
    "train/approx_kl",
)


def parameters_finite(module: torch.nn.Module) -> bool:
    return all(bool(torch.isfinite(p).all()) for p in module.parameters())


class UpdateReportingMixin:
    """Mix into an SB3 on-policy algorithm: `update_listeners` get (model, metrics) per update."""

    update_listeners: list[UpdateListener]
    n_updates_done: int = 0
    # Checked before each rollout, so a stop lands on an update boundary: the checkpoint then
    # holds whole updates and a resumed run keeps the same rollout grid.
    should_stop: Callable[[], bool] | None = None

    def __init__(
        self, *args: Any, update_listeners: list[UpdateListener] | None = None, **kwargs: Any
    ) -> None:
        self.update_listeners = list(update_listeners or [])
        super().__init__(*args, **kwargs)

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "update_listeners", "should_stop"]  # type: ignore[misc]

    def collect_rollouts(self, *args: Any, **kwargs: Any) -> bool:
        if self.should_stop is not None and self.should_stop():
            return False
        return bool(super().collect_rollouts(*args, **kwargs))  # type: ignore[misc]

    def train(self) -> None:
        logger = self.logger  # type: ignore[attr-defined]
        logger.name_to_value.clear()
        try:
            super().train()  # type: ignore[misc]
        except ValueError as error:
            # torch.distributions rejects NaN logits/means: that is divergence, not a bug.
            if not parameters_finite(self.policy):  # type: ignore[attr-defined]
                raise NonFiniteError(
                    f"parameters became non-finite during the update: {error}"
                ) from error
            raise
        metrics = {
            key: float(value)
            for key, value in logger.name_to_value.items()
            if key.startswith("train/") and isinstance(value, numbers.Real)
        }
        self.n_updates_done = getattr(self, "n_updates_done", 0) + 1
        bad = non_finite_metrics({k: v for k, v in metrics.items() if k in _FINITE_REQUIRED})
        if bad or not parameters_finite(self.policy):  # type: ignore[attr-defined]
            what = ", ".join(f"{name}={metrics[name]}" for name in bad) or "policy parameters"
            raise NonFiniteError(f"non-finite values after update {self.n_updates_done}: {what}")
        for listener in getattr(self, "update_listeners", []):
            listener(self, metrics)
