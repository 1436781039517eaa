"""A two-objective study (final return, env steps to threshold): its Pareto front and the one
trial of it that best_spec.yaml holds (the highest return; of equal returns, the fewest steps).

Optuna cannot prune a multi-objective trial (`Trial.report` refuses), so such a study runs
every trial to its end; the summary says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import optuna


def pareto_front(study: optuna.Study) -> list[dict[str, Any]]:
    """The trials no other completed trial beats on both objectives, best return first."""
    front = [
        {
            "number": t.number,
            "final_return": float(t.values[0]),
            "steps_to_threshold": float(t.values[1]),
            "params": dict(t.params),
            "seed_scores": t.user_attrs.get("seed_scores"),
        }
        for t in study.best_trials
    ]
    return sorted(front, key=lambda p: (-p["final_return"], p["steps_to_threshold"], p["number"]))


def pareto_pick(study: optuna.Study) -> optuna.trial.FrozenTrial | None:
    """The front's trial with the highest return (ties: fewer steps), or None."""
    front = pareto_front(study)
    if not front:
        return None
    return next(t for t in study.best_trials if t.number == front[0]["number"])


def pareto_markdown(front: list[dict[str, Any]], threshold: float | None, chosen: int) -> list[str]:
    lines = [
        "## Pareto front (final return vs env steps to threshold)",
        "",
        f"{len(front)} trial(s) no other trial beats on both objectives. Env steps to reach "
        f"{threshold}: a seed that never reached it scores the budget + penalty. "
        "best_spec.yaml is the front's highest return (ties: fewest steps).",
        "",
        "| trial | final return | env steps to threshold | note |",
        "|---|---|---|---|",
    ]
    for p in front:
        note = "**best_spec.yaml**" if p["number"] == chosen else ""
        lines.append(
            f"| {p['number']} | {p['final_return']:.4g} | {p['steps_to_threshold']:.0f} | {note} |"
        )
    return [*lines, ""]


def track_front(tracker: Any, front: list[dict[str, Any]]) -> None:
    """The front on the study's MLflow run: one point per front trial, stepped by its number."""
    for p in front:
        tracker.log_metrics(
            {
                "pareto/final_return": p["final_return"],
                "pareto/steps_to_threshold": p["steps_to_threshold"],
            },
            p["number"],
        )
