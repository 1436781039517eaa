"""The spec's `diagnostics:` section: the per-update health checks, defaulting to the one
definition of each threshold (`ppo_platform.health.thresholds`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ppo_platform.health.thresholds import DEFAULTS
from ppo_platform.spec.base import StrictModel


class DiagnosticsSpec(StrictModel):
    """Thresholds of the per-update health checks (defaults from the lessons)."""

    monitor_kl: bool = Field(True, description="Watch approx KL (refused off for PPO).")
    monitor_clip_fraction: bool = Field(True, description="Watch clip fraction (refused off).")
    kl_healthy_max: float = Field(
        DEFAULTS.kl_healthy_max, gt=0, description="Healthy approx KL is in [0, this]."
    )
    kl_alert: float = Field(
        DEFAULTS.kl_alert, gt=0, description="Alert above this KL: lower K or LR."
    )
    clip_fraction_low: float = Field(
        DEFAULTS.clip_fraction_low,
        ge=0,
        description="Clip fraction below this for `window` updates: raise LR or K.",
    )
    clip_fraction_high: float = Field(
        DEFAULTS.clip_fraction_high,
        gt=0,
        le=1,
        description="Alert at or above this clip fraction: lower LR or K.",
    )
    drift_clip_fraction: float = Field(
        DEFAULTS.drift_clip_fraction,
        gt=0,
        le=1,
        description="Clip fraction above this for `window` updates is drift.",
    )
    window: int = Field(
        DEFAULTS.window, ge=1, description="Consecutive updates that make a sustained signal."
    )
    explained_variance_min: float = Field(
        DEFAULTS.explained_variance_min,
        description="Alert if explained variance stays at or below this late in training (a "
        "critic stuck on unnormalized 1e4-scale rewards reads +1e-5, never exactly 0).",
    )
    return_variance_floor: float = Field(
        DEFAULTS.return_variance_floor,
        ge=0,
        le=1,
        description="Judge explained variance only when Var(returns) >= this x value_scale^2; "
        "below it (e.g. a solved CartPole, every return ~the same) it is logged as not "
        "informative and never alerted.",
    )
    value_scale: float | None = Field(
        None,
        gt=0,
        description="Typical size of the values for `return_variance_floor`; null: the root "
        "mean square of each rollout's returns.",
    )
    kl_source: Literal["post_update", "minibatch"] = Field(
        "post_update",
        description="KL read by the KL alert and `surrogate.target_kl`: `post_update` (the "
        "rollout policy vs the updated one over the whole rollout, checked after each epoch) "
        "or `minibatch` (SB3's: each minibatch before its own step).",
    )
    late_fraction: float = Field(
        DEFAULTS.late_fraction,
        ge=0,
        le=1,
        description="'Late in training' starts at this fraction of the budget.",
    )
    on_alert: Literal["warn", "stop"] = Field(
        "warn", description="`stop` ends training on the first critical alert."
    )
    clip_fraction_needs_kl: bool = Field(
        True,
        description="Clip-fraction alerts (high, drift) are judged only when approx KL is "
        "above kl_healthy_max too; with a healthy KL a high clip fraction is not an alert (a "
        "small clip range and many epochs clip most ratios while the policy barely moves, e.g. "
        "the zoo's tuned HalfCheetah). false: judged on the clip fraction alone.",
    )

    @model_validator(mode="after")
    def _ordered_thresholds(self) -> DiagnosticsSpec:
        if self.kl_alert < self.kl_healthy_max:
            raise ValueError(
                f"kl_alert ({self.kl_alert}) must be >= kl_healthy_max ({self.kl_healthy_max})"
            )
        return self
