"""Report each update's diagnostics the moment it is computed, and stop on non-finite values.

Stock SB3 dumps the train/* metrics at the start of the *next* iteration; listeners registered
on a trainer's `UpdateHooks` see them right after the update that produced them.
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


class UpdateHooks:
    """What a trainer runs around each update, as one object it holds (`model.update_hooks`):
    listeners get (model, metrics) right after the update that produced them, a stop condition
    is checked before each rollout, and non-finite losses or parameters stop training.

    Not saved with a model (a loaded model starts with no listener and no stop condition).
    """

    def __init__(self, listeners: list[UpdateListener] | None = None) -> None:
        self.listeners: list[UpdateListener] = list(listeners or [])
        self.stop_condition: StopCondition | None = None

    def stop_requested(self) -> bool:
        return self.stop_condition is not None and self.stop_condition()

    def run_update(self, model: Any, update: Callable[[], None]) -> None:
        """`update()` (one SB3 `train()`), then its train/* metrics to every listener."""
        logger = model.logger
        logger.name_to_value.clear()
        try:
            update()
        except ValueError as error:
            # torch.distributions rejects NaN logits/means: that is divergence, not a bug.
            if not parameters_finite(model.policy):
                raise NonFiniteError(
                    f"parameters became non-finite during the update: {error}"
                ) from error
            raise
        metrics = {
            key: float(value)
            for key, value in logger.name_to_value.items()
            if key.startswith("train/") and isinstance(value, numbers.Real)
        }
        model.n_updates_done = getattr(model, "n_updates_done", 0) + 1
        bad = non_finite_metrics({k: v for k, v in metrics.items() if k in _FINITE_REQUIRED})
        if bad or not parameters_finite(model.policy):
            what = ", ".join(f"{name}={metrics[name]}" for name in bad) or "policy parameters"
            raise NonFiniteError(f"non-finite values after update {model.n_updates_done}: {what}")
        for listener in self.listeners:
            listener(model, metrics)
