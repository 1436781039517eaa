"""What a seed and a trial score under the study's objective (`tune.objective`).

- `final_return`: the final evaluation's mean return (maximize).
- `steps_to_threshold`: the env steps at the first evaluation whose mean return reaches the
  threshold; a seed that never reaches it scores budget + penalty (minimize).
- `eval_auc`: the area under the evaluation curve over env steps (trapezoids) divided by the
  steps it spans: a mean return, so it compares across budgets (maximize).
- `return_and_steps`: final return and steps to threshold, both (a multi-objective study).

Seeds combine by the mean, or pessimistically by `tune.quantile`: quantile q of the values
to maximize, 1 - q of those to minimize (q = 0 is the worst seed either way).

The pruner's intermediate values are eval returns; for a minimize objective that is not a
return (steps to threshold) they are reported negated, so that lower is better for them too
and the pruner cuts the slow learners, never the fast ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ppo_platform.spec.search import TuneSpec

NAMES = {
    "final_return": ("final_return",),
    "eval_auc": ("eval_auc",),
    "steps_to_threshold": ("steps_to_threshold",),
    "return_and_steps": ("final_return", "steps_to_threshold"),
}


@dataclass
class SeedCurve:
    """The evaluations of one seed: by env step (scores) and by evaluation number (pruning)."""

    by_step: dict[int, float] = field(default_factory=dict)
    by_index: dict[int, float] = field(default_factory=dict)

    def auc(self) -> float:
        """Area under the eval curve over env steps, divided by the steps it spans."""
        points = sorted(self.by_step.items())
        if len(points) == 1:
            return float(points[0][1])
        steps = np.array([p[0] for p in points], dtype=float)
        values = np.array([p[1] for p in points], dtype=float)
        area = float(np.sum((values[1:] + values[:-1]) / 2.0 * np.diff(steps)))
        return area / float(steps[-1] - steps[0])

    def steps_to(self, threshold: float, miss: int) -> float:
        """Env steps at the first evaluation reaching `threshold`, else `miss`."""
        reached = [step for step, value in sorted(self.by_step.items()) if value >= threshold]
        return float(reached[0]) if reached else float(miss)


def objective_names(tune: TuneSpec) -> tuple[str, ...]:
    """The names of a trial's values, in order (one, or two for return_and_steps)."""
    return NAMES[tune.scoring.type]


def miss_score(tune: TuneSpec, total_timesteps: int) -> int:
    """What a seed that never reaches the threshold scores: the budget + the penalty."""
    penalty = tune.scoring.penalty
    return total_timesteps + (total_timesteps if penalty is None else penalty)


def seed_scores(
    tune: TuneSpec, final_return: float, curve: SeedCurve, total_timesteps: int
) -> list[float]:
    """One seed's value per objective (the search's and the held-out runs')."""
    scores = []
    for name in objective_names(tune):
        if name == "eval_auc":
            scores.append(curve.auc())
        elif name == "steps_to_threshold":
            threshold = tune.scoring.threshold
            assert threshold is not None
            scores.append(curve.steps_to(threshold, miss_score(tune, total_timesteps)))
        else:
            scores.append(float(final_return))
    return scores


def aggregate(values: list[float], tune: TuneSpec, direction: str | None = None) -> float:
    """Combine per-seed values: their mean, or the pessimistic `tune.quantile` (taken from
    the top for a value to minimize)."""
    if tune.aggregate == "quantile":
        direction = direction or tune.directions[0]
        q = tune.quantile if direction == "maximize" else 1.0 - tune.quantile
        return float(np.quantile(values, q))
    return float(np.mean(values))


def trial_values(tune: TuneSpec, per_seed: list[list[float]]) -> list[float]:
    """A trial's value per objective from its seeds' scores (`per_seed[seed][objective]`)."""
    return [
        aggregate([scores[i] for scores in per_seed], tune, direction)
        for i, direction in enumerate(tune.directions)
    ]


def intermediate_sign(tune: TuneSpec) -> float:
    """+1: report eval returns to the pruner as they are; -1: negated (steps to threshold)."""
    return -1.0 if tune.scoring.type == "steps_to_threshold" else 1.0
