"""Held-out verification: after the search, the top trials re-run on seeds never searched.

Searched scores are noisy (a few seeds, a few evaluation episodes) and the sampler learns to
exploit that noise, so the winner of a search often does not hold on fresh seeds. With
`tune.verify`, the `top_trials` best completed trials (by searched score) train again on each of
`verify.seeds`, through the same `run_spec` path and the same worker pool a search uses, each as
an MLflow run (kind `verify`, a child of the study run, with one training run per seed). On
the compiled path (training/compiled_path.py) a trial's held-out seeds train together, as one
batch in one process (training/compiled_batch.py), each still a training run of its own. A
verified trial's held-out score is the same aggregate (mean or quantile) the search uses; the
study's best is then the best by held-out score.

The spread is stated per verified trial with the statistics every comparison uses
(reports/statistics.py, docs/guides/comparing-runs.md): the min and max over held-out seeds,
the mean and IQM with stratified percentile-bootstrap 95% intervals that never leave the
observed range (none with a single seed), and, with `verify.solve_threshold`, the seeds that
reached it with an exact (Clopper-Pearson) interval of the solve rate.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ppo_platform.errors import TrainingError
from ppo_platform.execution.base import Task, TaskResult
from ppo_platform.execution.choose import pool_executor
from ppo_platform.execution.local import run_tasks
from ppo_platform.settings import Settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.tracking import tags as tag
from ppo_platform.tracking.remote import RemoteRun
from ppo_platform.training.compiled_path import training_path
from ppo_platform.training.result import RunResult
from ppo_platform.workloads import run_experiment

if TYPE_CHECKING:
    import optuna


@dataclass(frozen=True)
class VerifyConfig:
    """What a verification task needs (picklable)."""

    spec: ExperimentSpec
    study_name: str
    parent_run_id: str
    settings: Settings
    from_outside: bool  # the study's caller's rules (the service's: see check_space)


def spread(values: list[float], threshold: float | None = None) -> dict[str, Any]:
    """Min, max, mean and IQM over held-out seeds with their bootstrap 95% intervals (inside
    the observed range; none with one seed) and, with `threshold`, the solve rate (seeds
    scoring at least `threshold`) with its exact interval."""
    from ppo_platform.reports.statistics import bootstrap_interval, iqm, solve_rate

    several = len(values) > 1
    found: dict[str, Any] = {
        "min": float(min(values)),
        "max": float(max(values)),
        "mean": float(sum(values) / len(values)),
        "iqm": iqm(values),
        "ci95": list(bootstrap_interval(values, "mean")) if several else None,
        "iqm_ci95": list(bootstrap_interval(values, "iqm")) if several else None,
        "solve_threshold": threshold,
        "solved": None,
    }
    if threshold is not None:
        rate = solve_rate(sum(v >= threshold for v in values), len(values))
        found["solved"] = {"solved": rate.solved, "runs": rate.runs, "rate": rate.rate}
        found["solved"]["ci95"] = list(rate.ci)
    return found


def top_trials(study: optuna.Study, spec: ExperimentSpec) -> list[optuna.trial.FrozenTrial]:
    """The `verify.top_trials` best completed trials by searched score, best first."""
    assert spec.tune is not None and spec.tune.verify is not None
    complete = [t for t in study.get_trials(deepcopy=False) if t.state.name == "COMPLETE"]
    ranked = sorted(
        complete, key=lambda t: float(t.value or 0.0), reverse=spec.tune.directions[0] == "maximize"
    )
    return ranked[: spec.tune.verify.top_trials]


def held_out_spec(spec: ExperimentSpec, trial_spec: ExperimentSpec, seed: int) -> ExperimentSpec:
    """The trial's spec on one held-out seed, with the verification's evaluation episodes."""
    assert spec.tune is not None and spec.tune.verify is not None
    episodes = spec.tune.verify.episodes or trial_spec.evaluation.episodes
    return trial_spec.model_copy(
        update={
            "budget": trial_spec.budget.model_copy(update={"seed": seed}),
            "evaluation": trial_spec.evaluation.model_copy(update={"episodes": episodes}),
        }
    )


def verify_trial(config: VerifyConfig, trial: optuna.trial.FrozenTrial) -> dict[str, Any]:
    """Train one trial's spec on every held-out seed; its held-out score and spread."""
    from ppo_platform.tuning.outputs import best_spec
    from ppo_platform.tuning.runs import TrialRun
    from ppo_platform.tuning.scoring import SeedCurve, aggregate, seed_scores

    spec = config.spec
    assert spec.tune is not None and spec.tune.verify is not None
    trial_spec = best_spec(spec, trial, from_outside=config.from_outside)
    assert isinstance(trial_spec, ExperimentSpec)  # check_space refuses verify for ppo_lm
    run = TrialRun(_open_verify_run(config, trial, trial_spec))
    values: list[float] = []
    timesteps = alerts = 0
    with run.tracker:
        seeds = spec.tune.verify.seeds
        specs = [held_out_spec(spec, trial_spec, seed) for seed in seeds]
        curves = {seed: SeedCurve() for seed in seeds}
        tags = {seed: _seed_tags(config.study_name, trial.number, seed) for seed in seeds}
        trained = _train_held_out(config, specs, curves, tags, run.run_id)
        for index, seed in enumerate(seeds):
            result = trained[seed]
            if isinstance(result, str):  # diverged in a compiled batch: as a lone run raises
                run.finish("FAIL", None, timesteps, alerts, f"seed {seed}: diverged")
                raise TrainingError(f"held-out seed {seed}: {result}")
            timesteps, alerts = timesteps + result.timesteps, alerts + result.alerts
            if result.outcome != "completed" or result.final_eval_mean is None:
                run.finish("FAIL", None, timesteps, alerts, f"seed {seed}: {result.outcome}")
                raise RuntimeError(f"held-out seed {seed}: {result.outcome} {result.message}")
            total = trial_spec.budget.total_timesteps
            values.append(seed_scores(spec.tune, result.final_eval_mean, curves[seed], total)[0])
            run.log_seed(index, values[-1], result.timesteps, result.alerts)
        score = aggregate(values, spec.tune)
        run.finish("COMPLETE", score, timesteps, alerts)
    return {
        "number": trial.number,
        "searched_value": trial.value,
        "held_out_value": score,
        "seeds": list(spec.tune.verify.seeds),
        "seed_values": values,
        "timesteps": timesteps,
        "run_id": run.run_id,
        **spread(values, spec.tune.verify.solve_threshold),
    }


def _train_held_out(
    config: VerifyConfig,
    specs: list[ExperimentSpec],
    curves: dict[int, Any],
    tags: dict[int, dict[str, str]],
    parent_run_id: str,
) -> dict[int, RunResult | str]:
    """Each held-out seed's run: together as one batch on the compiled path (a seed that
    diverged: why, as text), else one after another, stopping at the first that fails."""
    seeds = [s.budget.seed for s in specs]
    if len(specs) > 1 and training_path(specs[0])["training_path"] == "compiled":
        from ppo_platform.training.compiled_batch import BatchMember, run_members  # jax

        batch = [BatchMember(s.budget.seed, s, tags[s.budget.seed]) for s in specs]
        done = run_members(
            batch,
            settings=config.settings,
            parent_run_id=parent_run_id,
            progress_for=lambda seed: _curve_collector(curves[seed]),
        )
        return {seed: done.results.get(seed) or done.failures[seed] for seed in seeds}
    trained: dict[int, RunResult | str] = {}
    for seed, seed_spec in zip(seeds, specs, strict=True):
        trained[seed] = result = run_experiment(
            seed_spec,
            on_progress=_curve_collector(curves[seed]),
            cancel=threading.Event(),
            settings=config.settings,
            parent_run_id=parent_run_id,
            tags=tags[seed],
        )
        if result.outcome != "completed" or result.final_eval_mean is None:
            break
    return trained


def _curve_collector(curve: Any) -> Any:
    def collect(event: Any) -> None:
        if event.kind == "eval":
            curve.by_step[event.timesteps] = event.eval_mean

    return collect


def _open_verify_run(
    config: VerifyConfig, trial: optuna.trial.FrozenTrial, trial_spec: ExperimentSpec
) -> RemoteRun:
    from ppo_platform.spec.experiment import flatten

    tags = {
        tag.RUN_NAME: f"verify-trial-{trial.number}",
        tag.PARENT_RUN_ID: config.parent_run_id,
        tag.KIND: "verify",
        tag.STUDY: config.study_name,
        tag.TRIAL_NUMBER: str(trial.number),
        tag.SPEC_HASH: trial_spec.spec_hash(),
    }
    params = flatten(trial_spec.resolved())
    return RemoteRun.open_kind("verify", tags, params=params, settings=config.settings)


def _seed_tags(study_name: str, number: int, seed: int) -> dict[str, str]:
    return {
        tag.RUN_NAME: f"verify-trial-{number}-seed-{seed}",
        tag.KIND: "seed",
        tag.STUDY: study_name,
        tag.TRIAL_NUMBER: str(number),
        tag.SEED: str(seed),
    }


def verify_trials(
    config: VerifyConfig,
    trials: list[optuna.trial.FrozenTrial],
    workers: int,
    on_result: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Verify `trials` (in worker processes when `workers` > 1); one entry per trial, in
    order, each also given to `on_result` as it ends. A trial whose verification failed
    carries `error` and no score."""
    tell = on_result or (lambda _: None)
    tasks = [Task(f"verify-trial-{t.number}", verify_trial, (config, t)) for t in trials]
    if workers <= 1 or len(tasks) <= 1:
        results = []
        for task in tasks:
            try:
                results.append(task.fn(*task.args))
            except (RuntimeError, TrainingError) as error:
                results.append(_failed(task.args[1], str(error)))
            tell(results[-1])
        return results
    by_key = {task.key: trial for task, trial in zip(tasks, trials, strict=True)}

    def done(result: TaskResult) -> None:
        tell(result.value if result.ok else _failed(by_key[result.key], result.error or "lost"))

    executor = pool_executor(config.settings, min(workers, len(tasks)))
    finished = run_tasks(
        tasks, executor=executor, max_attempts=config.settings.max_attempts, on_done=done
    )
    return [
        r.value if r.ok else _failed(t, r.error or "lost")
        for r, t in zip(finished, trials, strict=True)
    ]


def _failed(trial: optuna.trial.FrozenTrial, error: str) -> dict[str, Any]:
    return {
        "number": trial.number,
        "searched_value": trial.value,
        "held_out_value": None,
        "error": error,
    }
