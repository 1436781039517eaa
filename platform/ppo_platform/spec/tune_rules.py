"""Combinations of a `tune:` section that contradict each other: an objective and the older
metric/direction, an objective that needs periodic evaluations, racing that cannot race.

Each issue names the field, its value and the fix; `rules.refusals` includes them, so every
entry point (validate, tune, the API) answers them before anything runs.
"""

from __future__ import annotations

from typing import Any

from ppo_platform.errors import SpecIssue


def tune_objective_issues(spec: Any) -> list[SpecIssue]:
    """Every contradiction in the spec's `tune:` objective and racing (none without tune)."""
    tune = spec.tune
    if tune is None:
        return []
    return [
        *_objective_issues(spec),
        *_solve_threshold_issues(tune),
        *_racing_issues(tune),
        *_start_point_issues(tune),
    ]


def _objective_issues(spec: Any) -> list[SpecIssue]:
    tune = spec.tune
    objective = tune.objective
    issues = []
    if objective is not None and tune.metric is not None:
        issues.append(
            SpecIssue(
                "tune.metric",
                f"names a metric beside tune.objective ({objective.type}): one score only.",
                tune.metric,
                fix="remove tune.metric (tune.objective.type: final_return or eval_auc says "
                "the same).",
            )
        )
    if (
        objective is not None
        and not objective.multi
        and tune.direction is not None
        and tune.direction != objective.directions[0]
    ):
        issues.append(
            SpecIssue(
                "tune.direction",
                f"contradicts objective {objective.type}, which is to {objective.directions[0]}.",
                tune.direction,
                fix="remove tune.direction: the objective sets it.",
            )
        )
    if objective is not None and objective.multi and tune.direction is not None:
        issues.append(
            SpecIssue(
                "tune.direction",
                "one direction for a two-objective study (return: maximize, env steps: minimize).",
                tune.direction,
                fix="remove tune.direction: the objective sets both.",
            )
        )
    if tune.multi and tune.verify is not None:
        issues.append(
            SpecIssue(
                "tune.verify",
                "held-out verification picks the best by one score; objective "
                "return_and_steps has two (its result is a Pareto front).",
                "verify",
                fix="remove tune.verify, or use a single objective.",
            )
        )
    every = getattr(spec.evaluation, "every_timesteps", None)  # None: a language-model spec
    if tune.scoring.needs_threshold and every == 0:
        issues.append(
            SpecIssue(
                "evaluation.every_timesteps",
                f"is 0, so objective {tune.scoring.type} sees only the final evaluation: "
                "it cannot tell when the threshold was reached.",
                0,
                fix="set evaluation.every_timesteps to a fraction of budget.total_timesteps "
                "(e.g. a tenth).",
            )
        )
    return issues


def _solve_threshold_issues(tune: Any) -> list[SpecIssue]:
    """A held-out seed "solves" when its score reaches the threshold: a score to maximize."""
    issues: list[SpecIssue] = []
    solve = None if tune.verify is None else tune.verify.solve_threshold
    if solve is not None and not tune.multi and tune.directions[0] != "maximize":
        issues.append(
            SpecIssue(
                "tune.verify.solve_threshold",
                f"a seed solves when its score reaches {solve}, but this study minimizes "
                f"its score (objective {tune.scoring.type}).",
                solve,
                fix="remove tune.verify.solve_threshold (the winner is then chosen by the "
                "bootstrap bound of the held-out mean).",
            )
        )
    return issues


def _racing_issues(tune: Any) -> list[SpecIssue]:
    racing = tune.racing
    if racing is None:
        return []
    issues = []
    if racing.seeds_max <= tune.seeds_per_trial:
        issues.append(
            SpecIssue(
                "tune.racing.seeds_max",
                f"is not above tune.seeds_per_trial ({tune.seeds_per_trial}): no trial could "
                "earn more seeds.",
                racing.seeds_max,
                fix=f"set tune.racing.seeds_max above {tune.seeds_per_trial}, or remove "
                "tune.racing.",
            )
        )
    if tune.multi:
        issues.append(
            SpecIssue(
                "tune.racing",
                "ranks trials by one score; objective return_and_steps has two.",
                "racing",
                fix="remove tune.racing, or use a single objective (e.g. steps_to_threshold).",
            )
        )
    return issues


def _start_point_issues(tune: Any) -> list[SpecIssue]:
    """A start point must name searched paths and values the space can sample."""
    issues = []
    for index, point in enumerate(tune.start_points):
        for path, value in point.items():
            where = f"tune.start_points[{index}].{path}"
            dist = tune.space.get(path)
            if dist is None:
                issues.append(
                    SpecIssue(where, "is not in tune.space.", value, fix="add it to the space.")
                )
            elif not _in_space(dist, value):
                issues.append(
                    SpecIssue(
                        where,
                        "is a value the space cannot sample.",
                        value,
                        fix="use one of its choices, or a value within low..high on its step.",
                    )
                )
    return issues


def _in_space(dist: Any, value: Any) -> bool:
    if dist.type == "categorical":
        return value in dist.choices
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if not dist.low <= value <= dist.high:
        return False
    return dist.type == "float" or (value == int(value) and (value - dist.low) % dist.step == 0)
