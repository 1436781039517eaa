"""Every health threshold, defined once: the live monitor's, the spec's defaults and the doctor's.

The step-size ones are the lessons' healthy ranges (approx KL in [0, 0.02], alert above 0.1;
clip fraction 0.1-0.3, ~0 means the step is too small, >= 0.5 too large, > 0.4 sustained is
drift); each is documented in docs/guides/diagnostics.md. `Thresholds` is what the live monitor
judges every update by and what a spec's `diagnostics:` section defaults to; `Limits` holds the
doctor's, which start from the same values (a test fails if a threshold value is written twice
anywhere in the code).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# Below this clip range (a linear schedule's end) the clip fraction means nothing: not judged.
MIN_CLIP_RANGE_CHECKED = 0.01
# A linear schedule ends near 0: once the LR or the clip range is below this fraction of its
# largest value in the run, tiny updates are the schedule's doing, not a too-low LR or K.
ANNEALED_FRACTION = 0.1


@dataclass(frozen=True)
class Thresholds:
    """When a signal leaves its healthy range. Defaults are the lessons' values."""

    kl_healthy_max: float = 0.02
    kl_alert: float = 0.1
    clip_fraction_low: float = 0.01
    clip_fraction_high: float = 0.5
    drift_clip_fraction: float = 0.4
    window: int = 5
    explained_variance_min: float = 0.05
    late_fraction: float = 0.5
    monitor_kl: bool = True
    monitor_clip_fraction: bool = True
    # Which KL the alert reads: the rollout-to-updated-policy KL, or SB3's per-minibatch one.
    kl_source: Literal["post_update", "minibatch"] = "post_update"
    # Explained variance is judged only when Var(returns) >= floor x value_scale^2.
    return_variance_floor: float = 1e-3
    value_scale: float | None = None  # None: the RMS of the rollout's returns
    # A high clip fraction is judged only when the KL confirms a large step: with a small clip
    # range (0.1, as tuned MuJoCo and Atari configs use) and many epochs, most ratios leave
    # [1 - eps, 1 + eps] while the policy barely moves (benchmarks: sample_efficiency).
    clip_fraction_needs_kl: bool = True


DEFAULTS = Thresholds()


@dataclass(frozen=True)
class Limits:
    """The doctor's thresholds: the monitor's where they share a meaning, then its own."""

    kl_healthy_max: float = DEFAULTS.kl_healthy_max
    kl_alert: float = DEFAULTS.kl_alert
    kl_aim: float = 0.01  # a patched learning rate aims at the middle of the healthy range
    kl_tiny: float = 0.001  # a step too small: the KL stays below this ...
    clip_fraction_low: float = DEFAULTS.clip_fraction_low  # ... and the clip fraction below this
    large_share: float = 0.25  # KL above the alert on this share of updates (3 at least)
    small_share: float = 0.8  # KL and clip fraction tiny on this share of judged updates
    critic_share: float = 0.8  # explained variance low on this share of late judged updates
    critic_min_updates: int = 10  # late judged updates the critic needs (it had a chance)
    # The value loss over the returns' second moment (RMS^2) fell to this share of its first
    # third by the last: the critic is moving towards its targets (still fitting their level).
    critic_progress: float = 0.5
    lr_max: float = 0.003  # a raised learning rate stops here (unless it started above)
    min_updates: int = 5  # judged updates a sustained cause needs at least
    annealed_fraction: float = ANNEALED_FRACTION  # LR below this share of its peak: not too small
    explained_variance_min: float = DEFAULTS.explained_variance_min
    return_variance_floor: float = DEFAULTS.return_variance_floor  # Var(returns) >= floor x RMS^2
    late_fraction: float = DEFAULTS.late_fraction
    observation_abs_max: float = 100.0  # raw observations beyond +-this: normalize them
    reward_per_step_max: float = 100.0  # mean |reward| per step beyond this: normalize rewards
    returns_rms_max: float = 1000.0  # GAE targets beyond this RMS: normalize rewards
    entropy_collapse_share: float = 0.1  # entropy below this share of its first value ...
    entropy_collapse_by: float = 0.5  # ... before this share of the run, then no progress
    std_min: float = 0.05  # Gaussian std below this before half the run, then no progress
    action_clip_max: float = 0.5  # more than this share of sampled actions outside the bounds
    # ... on half the late rollouts (the std had a chance to adapt), and either this many more
    # than the untrained policy clipped (its first rollouts: the mean left the range) ...
    action_clip_rise: float = 0.15
    action_clip_total: float = 0.8  # ... or this share at least (the range is far too narrow)
    # Episodes longer than this many effective horizons 1/(1-gamma). Tuned configs learn at 5
    # (the zoo's Acrobot, gamma 0.99) and 20 (its Pendulum, gamma 0.9): the fault corpus
    # (benchmarks/learning/doctor_corpus.py) raised false alarms below 25.
    horizon_ratio: float = 25.0
    gamma_range: tuple[float, float] = (0.9, 0.999)
    rollout_ratio: float = 20.0  # episodes longer than this many rollouts (T steps) ...
    min_batch: int = 256  # ... or fewer transitions per rollout than this
    lm_beta_floor: float = 1e-6  # beta at or below this is no penalty at all
    lm_kl_runaway_factor: float = 10.0  # lm/kl_ref above this many targets ...
    lm_kl_reference: float = 1.0  # ... or, with a fixed beta (no target), this many nats
    lm_length_collapse_share: float = 0.25  # responses shorter than this share of the first
    max_lr_factor: float = 1000.0
    # One update far past its alarm, then the entropy (or the std) collapses: a step too large
    # that never sustains. "Far": the KL at 10 x kl_alert (1.0) or the clip fraction at 0.9.
    # Known-good runs stay well below both: over 120 CartPole-v1 and Acrobot-v1 runs (both
    # training paths, 20k env steps, docs/guides/diagnostics.md) the largest single-update KL
    # was 0.072 and the largest clip fraction 0.55; the first-update collapse the issue saw
    # had KL ~16 and clip fraction 0.96.
    kl_event_factor: float = 10.0
    clip_fraction_event: float = 0.9
    # Training that turned NaN on finite inputs: the step blew up. The KL of that update is
    # NaN, so the patch divides the learning rate by this fixed factor.
    diverged_lr_factor: float = 10.0


LIMITS = Limits()
