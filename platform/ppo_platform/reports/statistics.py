"""The statistics behind every comparison the platform prints (docs/guides/comparing-runs.md).

Point estimates: mean, median and the interquartile mean (IQM: the mean of the middle 50% of
scores, robust to one bad seed and less noisy than the median). Intervals: stratified
percentile bootstrap (seeds resampled within each env/task), seeded so the same scores always
give the same interval. A percentile interval of the mean, median or IQM of resampled observed
scores cannot leave the observed range, and is clipped to it against float rounding.

The probability of improvement P(X > Y) is the Mann-Whitney statistic: the chance that a
random seed of X scores above a random seed of Y, ties counted 0.5, averaged over tasks. Its
bootstrap interval (widened for small samples: `_small_sample_factor`) gives the verdict:
`better` when the whole 95% interval lies above 0.5,
`worse` when it lies below, `indistinguishable` otherwise. Solve rates (a seed solved or not)
get an exact Clopper-Pearson interval.

Written with numpy and scipy rather than `rliable` (Agarwal et al., 2021, whose estimators these
are): rliable 1.2.0 resolves beside our pins but its arch 7.2.0 does not import with pandas 3,
it would pull in six packages, and it calls a Python function per bootstrap replicate; here
every replicate of a group is one vectorised array (docs/guides/comparing-runs.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

CONFIDENCE = 0.95
REPS = 2000  # bootstrap replicates: the interval's ends move by < 1% of its width between seeds
MIN_SEEDS = 5  # fewer seeds than this: said plainly next to the numbers
BETTER, WORSE, INDISTINGUISHABLE = "better", "worse", "indistinguishable"
STATISTICS = ("iqm", "mean", "median")

# Scores of one group: one array of seeds, or per task (env id) an array of seeds.
Scores = Sequence[float] | np.ndarray | Mapping[str, Sequence[float] | np.ndarray]


def _by_task(scores: Scores) -> dict[str, np.ndarray]:
    """Scores as task -> 1-d float array; a plain sequence is one task."""
    items = scores.items() if isinstance(scores, Mapping) else [("", scores)]
    tasks = {str(task): np.asarray(values, dtype=float).ravel() for task, values in items}
    for task, values in tasks.items():
        if values.size == 0:
            raise ValueError(f"no scores for task {task!r}: every task needs at least one seed.")
        if not np.all(np.isfinite(values)):
            raise ValueError(f"scores of task {task!r} are not all finite: {values.tolist()}")
    return tasks


def _rows_statistic(samples: np.ndarray, statistic: str) -> np.ndarray:
    """`statistic` of each row of a (replicates, seeds) array."""
    if statistic == "mean":
        return np.asarray(samples.mean(axis=-1))
    if statistic == "median":
        return np.asarray(np.median(samples, axis=-1))
    if statistic == "iqm":
        ordered = np.sort(samples, axis=-1)
        cut = int(0.25 * ordered.shape[-1])  # as scipy.stats.trim_mean(x, 0.25)
        return np.asarray(ordered[..., cut : ordered.shape[-1] - cut].mean(axis=-1))
    raise ValueError(f"unknown statistic {statistic!r}: use one of {', '.join(STATISTICS)}.")


def point(scores: Scores, statistic: str = "iqm") -> float:
    """The mean, median or IQM of all scores (every task's seeds together)."""
    pooled = np.concatenate(list(_by_task(scores).values()))
    return float(_rows_statistic(pooled[None, :], statistic)[0])


def iqm(scores: Scores) -> float:
    """The interquartile mean: the mean of the middle 50% of the scores."""
    return point(scores, "iqm")


def _resample(tasks: dict[str, np.ndarray], reps: int, rng: np.random.Generator) -> np.ndarray:
    """(reps, all seeds) replicates: each task's seeds drawn with replacement within the task."""
    columns = [
        values[rng.integers(0, values.size, (reps, values.size))] for values in tasks.values()
    ]
    return np.concatenate(columns, axis=1)


def _percentiles(values: np.ndarray, confidence: float) -> tuple[float, float]:
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(values, [tail, 1.0 - tail], axis=-1)
    return float(low), float(high)


def bootstrap_interval(
    scores: Scores,
    statistic: str = "iqm",
    *,
    confidence: float = CONFIDENCE,
    reps: int = REPS,
    seed: int = 0,
) -> tuple[float, float]:
    """The stratified percentile-bootstrap interval of `statistic`, inside the observed range."""
    _check_confidence(confidence)
    tasks = _by_task(scores)
    replicates = _rows_statistic(_resample(tasks, reps, np.random.default_rng(seed)), statistic)
    low, high = _percentiles(replicates, confidence)
    pooled = np.concatenate(list(tasks.values()))
    lowest, highest = float(pooled.min()), float(pooled.max())
    return min(max(low, lowest), highest), min(max(high, lowest), highest)


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence {confidence!r} must lie strictly between 0 and 1, e.g. 0.95.")


def _improvement_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """P(X > Y) with ties 0.5 per row of (replicates, seeds) arrays x and y."""
    above = (x[..., :, None] > y[..., None, :]).mean(axis=(-2, -1))
    ties = (x[..., :, None] == y[..., None, :]).mean(axis=(-2, -1))
    return np.asarray(above + 0.5 * ties)


def _paired_tasks(x: Scores, y: Scores) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    tasks_x, tasks_y = _by_task(x), _by_task(y)
    if set(tasks_x) != set(tasks_y):
        raise ValueError(
            f"the groups were run on different tasks ({sorted(tasks_x)} and {sorted(tasks_y)}): "
            "compare groups over the same envs."
        )
    return tasks_x, tasks_y


def probability_of_improvement(x: Scores, y: Scores) -> float:
    """P(X > Y): the chance a random seed of X beats one of Y (ties 0.5), averaged over tasks."""
    tasks_x, tasks_y = _paired_tasks(x, y)
    per_task = [_improvement_rows(tasks_x[t][None], tasks_y[t][None])[0] for t in tasks_x]
    return float(np.mean(per_task))


def improvement_interval(
    x: Scores,
    y: Scores,
    *,
    confidence: float = CONFIDENCE,
    reps: int = REPS,
    seed: int = 0,
) -> tuple[float, float]:
    """The stratified bootstrap interval of P(X > Y): X and Y resampled independently per task."""
    _check_confidence(confidence)
    tasks_x, tasks_y = _paired_tasks(x, y)
    n = min(v.size for v in tasks_x.values())
    m = min(v.size for v in tasks_y.values())
    if min(n, m) < 2 or too_few_to_tell(n, m, confidence):
        return 0.0, 1.0  # no verdict either way: see too_few_to_tell
    rng = np.random.default_rng(seed)
    per_task = []
    for task, values_x in tasks_x.items():
        values_y = tasks_y[task]
        sample_x = values_x[rng.integers(0, values_x.size, (reps, values_x.size))]
        sample_y = values_y[rng.integers(0, values_y.size, (reps, values_y.size))]
        per_task.append(_improvement_rows(sample_x, sample_y))
    low, high = _percentiles(np.mean(per_task, axis=0), confidence)
    centre = probability_of_improvement(tasks_x, tasks_y)
    widen = _small_sample_factor(n, m, confidence)
    return max(0.0, centre - (centre - low) * widen), min(1.0, centre + (high - centre) * widen)


def too_few_to_tell(n: int, m: int, confidence: float = CONFIDENCE) -> bool:
    """Whether n seeds against m are too few for any verdict: even if every seed of one group
    beat every seed of the other, an exact rank test (Mann-Whitney, two-sided) could not reach
    `confidence`, since that ordering has probability 2 / C(n + m, n) by chance alone
    (3 against 3: 0.1; 4 against 4: 0.03)."""
    return 2.0 / math.comb(n + m, n) > 1.0 - confidence


def _small_sample_factor(n: int, m: int, confidence: float) -> float:
    """How much wider the P(X > Y) interval is drawn than the raw percentile one.

    A bootstrap of n seeds underestimates the spread by (n - 1) / n and uses normal rather than
    t tails, so with 5 seeds a raw percentile interval calls two draws of one population
    different 12% of the time at "95%". Scaling it about the estimate by sqrt(n / (n - 1)) and
    t(n + m - 2) / z brings that to the nominal 5% (measured: docs/guides/comparing-runs.md).
    """
    from scipy.stats import norm, t

    tail = 1.0 - (1.0 - confidence) / 2.0
    bessel = math.sqrt(max(n / (n - 1), m / (m - 1)))
    return float(bessel * t.ppf(tail, n + m - 2) / norm.ppf(tail))


def verdict(interval: tuple[float, float]) -> str:
    """`better` if the whole P(X > Y) interval lies above 0.5, `worse` below, else
    `indistinguishable`."""
    low, high = interval
    if low > 0.5:
        return BETTER
    if high < 0.5:
        return WORSE
    return INDISTINGUISHABLE


@dataclass(frozen=True)
class SolveRate:
    """Seeds that solved the task out of seeds run, with the exact (Clopper-Pearson) interval."""

    solved: int
    runs: int
    rate: float
    ci: tuple[float, float]

    def describe(self) -> str:
        low, high = self.ci
        return f"{self.solved}/{self.runs} solved ({self.rate:.0%}; 95% CI {low:.0%}-{high:.0%})"


def solve_rate(solved: int, runs: int, confidence: float = CONFIDENCE) -> SolveRate:
    """`solved` of `runs` with its exact binomial (Clopper-Pearson) interval."""
    from scipy.stats import beta

    _check_confidence(confidence)
    if runs < 1 or not 0 <= solved <= runs:
        raise ValueError(f"solved={solved}, runs={runs}: need runs >= 1 and 0 <= solved <= runs.")
    tail = (1.0 - confidence) / 2.0
    low = 0.0 if solved == 0 else float(beta.ppf(tail, solved, runs - solved + 1))
    high = 1.0 if solved == runs else float(beta.ppf(1.0 - tail, solved + 1, runs - solved))
    return SolveRate(solved, runs, solved / runs, (low, high))


def seeds_warning(name: str, n: int) -> str | None:
    """A plain warning when a group has fewer than MIN_SEEDS seeds (None otherwise)."""
    if n >= MIN_SEEDS:
        return None
    return (
        f"{name}: only {n} seed{'s' if n != 1 else ''}; intervals from fewer than {MIN_SEEDS} "
        "seeds are wide and a verdict rarely anything but indistinguishable: run more seeds."
    )


@dataclass
class GroupSummary:
    """One group's numbers, as `compare --json` writes them."""

    name: str
    n: int
    scores: list[float]
    iqm: float
    iqm_ci: tuple[float, float]
    mean: float
    mean_ci: tuple[float, float]
    median: float
    median_ci: tuple[float, float]
    tasks: list[str] = field(default_factory=list)
    solve_rate: SolveRate | None = None
    warning: str | None = None


@dataclass(frozen=True)
class PairVerdict:
    a: str
    b: str
    probability_of_improvement: float
    ci: tuple[float, float]
    verdict: str

    def describe(self) -> str:
        low, high = self.ci
        return (
            f"{self.a} vs {self.b}: P({self.a} > {self.b}) = "
            f"{self.probability_of_improvement:.2f} [{low:.2f}, {high:.2f}]: {self.verdict}"
        )


def summarize_group(
    name: str,
    scores: Scores,
    *,
    threshold: float | None = None,
    seed: int = 0,
    reps: int = REPS,
) -> GroupSummary:
    """Point estimates, intervals, the solve rate (with a threshold) and the seeds warning."""
    tasks = _by_task(scores)
    pooled = np.concatenate(list(tasks.values()))
    numbers: dict[str, Any] = {}
    for statistic in STATISTICS:
        numbers[statistic] = point(tasks, statistic)
        numbers[f"{statistic}_ci"] = bootstrap_interval(tasks, statistic, seed=seed, reps=reps)
    solved = (
        None if threshold is None else solve_rate(int((pooled >= threshold).sum()), pooled.size)
    )
    seeds = min(values.size for values in tasks.values())
    return GroupSummary(
        name=name,
        n=int(pooled.size),
        scores=[float(v) for v in pooled],
        tasks=[task for task in tasks if task],
        solve_rate=solved,
        warning=seeds_warning(name, seeds),
        **numbers,
    )


def compare_pair(
    a: str, x: Scores, b: str, y: Scores, *, seed: int = 0, reps: int = REPS
) -> PairVerdict:
    """P(a > b), its interval and the verdict."""
    interval = improvement_interval(x, y, seed=seed, reps=reps)
    return PairVerdict(a, b, probability_of_improvement(x, y), interval, verdict(interval))


def comparison_pairs(names: Sequence[str], baseline: str | None) -> list[tuple[str, str]]:
    """Every pair (a before b), or each group against `baseline`."""
    if baseline is None:
        return [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    if baseline not in names:
        raise ValueError(f"baseline {baseline!r} is not a group; the groups are {list(names)}.")
    return [(name, baseline) for name in names if name != baseline]


def describe_scores(values: Sequence[float], digits: int = 1, seed: int = 0) -> str:
    """`IQM 500.0 [480.2, 500.0] (95% CI, 3 seeds)`; one value: `500.0 (1 seed)`."""
    if len(values) == 1:
        return f"{values[0]:.{digits}f} (1 seed)"
    low, high = bootstrap_interval(values, seed=seed)
    return (
        f"IQM {iqm(values):.{digits}f} [{low:.{digits}f}, {high:.{digits}f}] "
        f"(95% CI, {len(values)} seeds)"
    )
