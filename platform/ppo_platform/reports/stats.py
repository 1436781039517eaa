"""A sweep report's numbers: per-run statistics and per-variant summaries (pure functions)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

Series = list[tuple[int, float]]
EVAL_KEY, KL_KEY, KL_POST_KEY, CLIP_KEY, ALERTS_KEY = (
    "eval/mean_reward",
    "train/approx_kl",
    "train/approx_kl_post",  # the rollout policy against the updated one: the update's size
    "train/clip_fraction",
    "diagnostics/alerts_total",
)
ALERT_SIGNAL_PREFIX = "diagnostics/alerts/"
STABILITY_TAIL = 0.25  # "stability": the last quarter of training (not the monitor's late_fraction)


@dataclass(frozen=True)
class ScoreWords:
    """What a report calls its score and its steps: a gymnasium sweep scores the final eval
    return over env steps; an LM sweep the mean reward of greedy responses to the held-out
    prompts (with `exact_answer` alone: held-out accuracy) over updates. Same metric key."""

    score: str  # "final return"
    steps: str  # "env steps"
    evaluation: str  # what one evaluation's number is
    curve: str  # the plot's y axis


GYM_WORDS = ScoreWords("final return", "env steps", "mean eval return", "return")
LM_WORDS = ScoreWords(
    "final held-out reward",
    "updates",
    "mean reward of greedy responses to the held-out prompts; with exact_answer alone, accuracy",
    "held-out reward",
)


def score_words(algorithm: str | None) -> ScoreWords:
    """The words for a sweep of `algorithm` (its parent's tag)."""
    return LM_WORDS if algorithm == "ppo_lm" else GYM_WORDS


# ---- per-run numbers (pure functions) ---------------------------------------------------------


def final_return(evals: Series) -> float | None:
    return evals[-1][1] if evals else None


def steps_to_threshold(evals: Series, threshold: float | None) -> int | None:
    """The first evaluation step whose mean return reaches `threshold` (None: never)."""
    if threshold is None:
        return None
    return next((step for step, value in evals if value >= threshold), None)


def late_std(evals: Series, fraction: float = STABILITY_TAIL) -> float | None:
    """Population std of the eval returns in the last `fraction` of training (None: < 2 evals)."""
    if not evals:
        return None
    cutoff = evals[-1][0] * (1 - fraction)
    late = [value for step, value in evals if step >= cutoff]
    return float(np.std(late)) if len(late) >= 2 else None


def series_mean(points: Series) -> float | None:
    return float(np.mean([value for _, value in points])) if points else None


def series_max(points: Series) -> float | None:
    return float(np.max([value for _, value in points])) if points else None


def default_threshold(env_id: str) -> float | None:
    """gymnasium's `reward_threshold` for the env (475 for CartPole-v1), if it has one."""
    import gymnasium as gym

    from ppo_platform.envs.own import register_envs

    register_envs()
    try:
        return gym.spec(env_id).reward_threshold
    except gym.error.Error:
        return None


@dataclass(frozen=True)
class SeedRun:
    """One child run of the sweep with the metric histories the report needs."""

    run_id: str
    name: str
    variant: str
    variant_index: int
    seed: int
    status: str
    error: str | None
    evals: Series
    approx_kl: Series
    clip_fraction: Series
    alerts: int
    approx_kl_post: Series = field(default_factory=list)
    alerts_by_signal: dict[str, int] = field(default_factory=dict)
    top_cause: str = ""  # the doctor's most likely cause at the run's end ("": none)

    @property
    def finished(self) -> bool:
        return self.status == "FINISHED"


@dataclass(frozen=True)
class VariantSummary:
    variant: str
    runs: int
    finished: int
    final_mean: float | None
    final_std: float | None
    final_min: float | None
    steps_to_threshold: tuple[int | None, ...]  # one per finished seed
    stability: float | None
    mean_kl: float | None
    mean_clip_fraction: float | None
    alerts: int
    mean_kl_post: float | None = None  # mean over seeds of each run's mean per update
    max_kl_post: float | None = None  # the largest post-update KL of any update of any seed
    alerts_by_signal: dict[str, int] = field(default_factory=dict)  # summed over seeds

    @property
    def reached(self) -> int:
        return sum(step is not None for step in self.steps_to_threshold)

    @property
    def mean_steps_to_threshold(self) -> float | None:
        steps = [s for s in self.steps_to_threshold if s is not None]
        return float(np.mean(steps)) if steps else None


@dataclass
class SweepReport:
    parent_run_id: str
    name: str
    env_id: str
    threshold: float | None
    variants: list[VariantSummary]
    runs: list[SeedRun] = field(repr=False)
    markdown: str = ""
    files: list[Path] = field(default_factory=list)
    comparison: Any = None  # reports.compare.Comparison of the variants' final returns
    words: ScoreWords = GYM_WORDS


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None and not math.isnan(v)]
    return float(np.mean(present)) if present else None


def _max(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None and not math.isnan(v)]
    return float(np.max(present)) if present else None


def _sum_counts(counts: Sequence[dict[str, int]]) -> dict[str, int]:
    total: Counter[str] = Counter()
    for count in counts:
        total.update(count)
    return dict(sorted(total.items()))


def summarize(variant: str, runs: list[SeedRun], threshold: float | None) -> VariantSummary:
    """The report's row for one variant, from its runs (stats over the FINISHED ones)."""
    ok = [run for run in runs if run.finished]
    finals = [v for v in (final_return(run.evals) for run in ok) if v is not None]
    return VariantSummary(
        variant=variant,
        runs=len(runs),
        finished=len(ok),
        final_mean=float(np.mean(finals)) if finals else None,
        final_std=float(np.std(finals)) if finals else None,
        final_min=float(np.min(finals)) if finals else None,
        steps_to_threshold=tuple(steps_to_threshold(run.evals, threshold) for run in ok),
        stability=_mean([late_std(run.evals) for run in ok]),
        mean_kl=_mean([series_mean(run.approx_kl) for run in ok]),
        mean_clip_fraction=_mean([series_mean(run.clip_fraction) for run in ok]),
        alerts=sum(run.alerts for run in runs),
        mean_kl_post=_mean([series_mean(run.approx_kl_post) for run in ok]),
        max_kl_post=_max([series_max(run.approx_kl_post) for run in ok]),
        alerts_by_signal=_sum_counts([run.alerts_by_signal for run in runs]),
    )
