"""The signal vocabulary: the metric names every trainer emits and the monitor and doctor read.

CleanRL-style names under `train/`; the doctor's aliases for other writers' names (SB3's and
CleanRL's TensorBoard tags) live in `ppo_platform.doctor.series`.
"""

from __future__ import annotations

KL = "train/approx_kl"  # per minibatch, before its own step (SB3's)
KL_POST = "train/approx_kl_post"  # rollout policy vs the updated one, over the whole rollout
CLIP_FRACTION = "train/clip_fraction"
CLIP_RANGE = "train/clip_range"
EXPLAINED_VARIANCE = "train/explained_variance"
LEARNING_RATE = "train/learning_rate"
RETURNS_STD = "train/returns_std"
RETURNS_RMS = "train/returns_rms"
