"""How a study searched, as its summary states it: the objective and its direction, the seeds
and their aggregate, the sampler, the pruner (or why there is none) and the racing."""

from __future__ import annotations

from typing import Any

from ppo_platform.spec.lm import LMExperimentSpec
from ppo_platform.spec.workloads import AnySpec
from ppo_platform.tuning.racing import racing_line
from ppo_platform.tuning.scoring import miss_score, objective_names
from ppo_platform.tuning.study import budget_unit, eval_schedule


def objective_line(spec: AnySpec) -> str:
    assert spec.tune is not None
    tune = spec.tune
    scoring = tune.scoring
    names = " and ".join(
        f"{d} {n}" for d, n in zip(tune.directions, objective_names(tune), strict=True)
    )
    if tune.aggregate == "quantile":
        how = f"quantile {tune.quantile} (the pessimistic side for each objective)"
    else:
        how = "mean"
    line = f"- objective: {names}, aggregated over seeds by {how}"
    if scoring.needs_threshold:
        miss = miss_score(tune, eval_schedule(spec)[1])
        line += (
            f"; threshold {scoring.threshold} (first evaluation whose mean return reaches it; "
            f"a seed that never does scores {miss} {budget_unit(spec)}: budget + penalty)"
        )
    if scoring.type == "eval_auc":
        line += f" (area under the eval curve over {budget_unit(spec)} / the span)"
    if isinstance(spec, LMExperimentSpec):
        line += " (return: the mean reward of greedy responses to lm.eval_prompts)"
    return line


def pruner_line(spec: AnySpec) -> str:
    assert spec.tune is not None
    tune = spec.tune
    pruner = tune.pruner
    if tune.multi:
        return (
            f"- pruner: off (Optuna cannot prune a multi-objective trial; the spec's "
            f"{pruner.type} pruner is not used): every trial ran to its end"
        )
    if pruner.type == "none":
        return "- pruner: none"
    intermediate = "eval return"
    if tune.scoring.type == "steps_to_threshold":
        intermediate = "negated eval return (lower is better, like env steps)"
    where = " (on the first rung's seeds only: racing judges a trial's further seeds)"
    return (
        f"- pruner: {pruner.type} ({pruner.n_startup_trials} startup trials, "
        f"{pruner.n_warmup_evaluations} warm-up evaluations), fed the seeds' aggregate "
        f"{intermediate} at each periodic evaluation" + (where if tune.racing else "")
    )


def method_lines(spec: AnySpec, rows: list[dict[str, Any]]) -> list[str]:
    """The summary's lines on how the study searched."""
    assert spec.tune is not None
    tune = spec.tune
    raced_out = sum(1 for row in rows if row.get("raced_out"))
    return [
        objective_line(spec),
        f"- seeds: {tune.seeds_per_trial} per trial"
        + (f", up to {tune.seeds_max} by racing" if tune.racing is not None else ""),
        f"- sampler: {tune.sampler.type} (seed {tune.sampler.seed}, "
        f"{tune.sampler.n_startup_trials} startup trials)",
        pruner_line(spec),
        racing_line(tune, raced_out),
    ]
