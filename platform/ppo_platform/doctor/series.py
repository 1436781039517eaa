"""A run's metric series as the doctor reads them: one signal name whichever logger wrote it.

Our runs, stable-baselines3 and CleanRL log the same quantities under different names (and SB3
logs minus the entropy); `View` maps each signal to the first name a run has.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

Points = list[tuple[int, float]]
Series = Mapping[str, Sequence[tuple[int, float]]]

# signal -> (metric name, sign) in order of preference
ALIASES: dict[str, tuple[tuple[str, float], ...]] = {
    "kl": (("train/approx_kl_post", 1.0), ("train/approx_kl", 1.0), ("losses/approx_kl", 1.0)),
    "clip_fraction": (("train/clip_fraction", 1.0), ("losses/clipfrac", 1.0)),
    "explained_variance": (
        ("train/explained_variance", 1.0),
        ("losses/explained_variance", 1.0),
    ),
    "entropy": (("train/entropy_loss", -1.0), ("losses/entropy", 1.0)),
    "std": (("train/std", 1.0),),
    "value_loss": (("train/value_loss", 1.0), ("losses/value_loss", 1.0)),
    "grad_norm": (("train/grad_norm", 1.0),),
    "learning_rate": (("train/learning_rate", 1.0), ("charts/learning_rate", 1.0)),
    "clip_range": (("train/clip_range", 1.0),),
    "episode_return": (("rollout/ep_rew_mean", 1.0), ("charts/episodic_return", 1.0)),
    "episode_length": (("rollout/ep_len_mean", 1.0), ("charts/episodic_length", 1.0)),
    "returns_std": (("train/returns_std", 1.0),),
    "returns_rms": (("train/returns_rms", 1.0),),
    # per rollout (trainers/callbacks.py RolloutStatsCallback)
    "obs_nonfinite": (("rollout/obs_nonfinite", 1.0),),
    "obs_abs_max": (("rollout/obs_abs_max", 1.0),),
    "reward_nonfinite": (("rollout/reward_nonfinite", 1.0),),
    "reward_abs_max": (("rollout/reward_abs_max", 1.0),),
    "action_clip_fraction": (("rollout/action_clip_fraction", 1.0),),
    # language models (trainers/lm/report.py, training/lm_runner.py)
    "lm_kl_ref": (("lm/kl_ref", 1.0),),
    "lm_kl_beta": (("lm/kl_beta", 1.0),),
    "lm_kl_penalty": (("lm/kl_penalty_mean", 1.0),),
    "lm_reward": (("lm/reward_mean", 1.0),),
    "lm_length": (("lm/response_length", 1.0),),
    "lm_group_zero_spread": (("lm/group_zero_spread_fraction", 1.0),),
    "eval_return": (("eval/mean_reward", 1.0),),
}


class View:
    """Signals of one run: finite (step, value) points sorted by step."""

    def __init__(self, series: Series) -> None:
        self.series = series
        self._cache: dict[str, Points] = {}

    def name(self, signal: str) -> str | None:
        """The metric name this run logs `signal` under (None: not logged)."""
        for name, _ in ALIASES[signal]:
            if self.series.get(name):
                return name
        return None

    def points(self, signal: str) -> Points:
        if signal not in self._cache:
            name = self.name(signal)
            sign = dict(ALIASES[signal]).get(name or "", 1.0)
            raw = self.series.get(name, ()) if name else ()
            self._cache[signal] = sorted(
                (int(step), sign * float(value)) for step, value in raw if math.isfinite(value)
            )
        return self._cache[signal]

    def values(self, signal: str) -> list[float]:
        return [value for _, value in self.points(signal)]

    def has(self, signal: str) -> bool:
        return bool(self.points(signal))

    def label(self, signal: str) -> str:
        return self.name(signal) or ALIASES[signal][0][0]


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        return math.nan
    mid = n // 2
    return ordered[mid] if n % 2 else 0.5 * (ordered[mid - 1] + ordered[mid])


def thirds(values: Sequence[float]) -> tuple[float, float]:
    """Mean of the first and of the last third of `values` (at least one value each)."""
    k = max(1, len(values) // 3)
    return sum(values[:k]) / k, sum(values[-k:]) / k


def improving(values: Sequence[float], share: float = 0.1) -> bool:
    """Whether the last third beats the first by `share` of the larger of its magnitude and
    the run's range: the return moved up, not only noise."""
    if len(values) < 3:
        return False
    first, last = thirds(values)
    scale = max(abs(first), max(values) - min(values), 1e-8)
    return last - first > share * scale


def sustained(
    points: Points, holds: Callable[[int, float], bool], share: float = 0.5, at_least: int = 1
) -> Points | None:
    """The points where `holds(step, value)`, when they are at least `share` of `points` and
    `at_least` in number: a condition that lasts, not a spike. None when it does not last."""
    kept = [(step, value) for step, value in points if holds(step, value)]
    if not kept or len(kept) < at_least or len(kept) < share * len(points):
        return None
    return kept


def sustained_above(
    view: View, signal: str, limit: float, share: float = 0.5, at_least: int = 1, since: float = 0
) -> Points | None:
    """The points of `signal` (from step `since` on) above `limit`, when they last (`sustained`);
    None when they do not (or `signal` has no point from `since` on)."""
    points = [(step, value) for step, value in view.points(signal) if step >= since]
    return sustained(points, lambda _, value: value > limit, share, at_least)


def first_step_where(points: Points, holds: object) -> int | None:
    """The step of the first point whose value satisfies `holds` (a predicate)."""
    for step, value in points:
        if holds(value):  # type: ignore[operator]
            return step
    return None
