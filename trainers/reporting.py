"""Report each update's diagnostics the moment it is computed, and stop on non-finite values.

Stock SB3 dumps the train/* metrics at the start of the *next* iteration; listeners registered
here see them right after the update that produced them.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any

import torch

from .errors import NonFiniteError

UpdateListener = Callable[[Any, dict[str, float]], None]
StopCondition = Callable[[], bool]

# Only loss-like metrics decide divergence: e.g. explained variance is legitimately NaN when
# the returns of a rollout have zero variance.
_FINITE_REQUIRED = (
    "train/loss",
    "train/value_loss",
    "train/policy_gradient_loss",
    "train/entropy_loss",
    "train/approx_kl",
)


def non_finite_metrics(metrics: dict[str, float]) -> list[str]:
    """Names of the metrics that are NaN or infinite."""
    return [name for name, value in metrics.items() if not math.isfinite(value)]


def parameters_finite(module: torch.nn.Module) -> bool:
    return all(bool(torch.isfinite(p).all()) for p in module.parameters())


class UpdateReportingMixin:
    """Mix into an SB3 on-policy algorithm: update listeners get (model, metrics) per update.

    Register listeners with `update_listeners=` or `add_update_listener`, and a stop condition
    with `set_stop_condition`; both are left out of saved checkpoints.
    """

    n_updates_done: int = 0

    def __init__(
        self, *args: Any, update_listeners: list[UpdateListener] | None = None, **kwargs: Any
    ) -> None:
        self._update_listeners: list[UpdateListener] = list(update_listeners or [])
        self._stop_condition: StopCondition | None = None
        super().__init__(*args, **kwargs)

    def add_update_listener(self, listener: UpdateListener) -> None:
        """Call `listener(model, metrics)` after every update, once its metrics are known."""
        self._update_listeners.append(listener)

    def set_stop_condition(self, condition: StopCondition | None) -> None:
        """Stop training cleanly once `condition()` is true (None: never stop early).

        Checked before each rollout, so a stop lands on an update boundary: the checkpoint then
        holds whole updates and a resumed run keeps the same rollout grid.
        """
        self._stop_condition = condition

    def stop_requested(self) -> bool:
        return self._stop_condition is not None and self._stop_condition()

    def _excluded_save_params(self) -> list[str]:
        excluded = super()._excluded_save_params()  # type: ignore[misc]
        return [*excluded, "_update_listeners", "_stop_condition"]

    def collect_rollouts(self, *args: Any, **kwargs: Any) -> bool:
        if self.stop_requested():
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
        for listener in self._update_listeners:
            listener(self, metrics)
