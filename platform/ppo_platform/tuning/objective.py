"""One trial: sample -> full validated spec -> train each seed -> one aggregated score.

Seeds run one after another. The pruner's step is the evaluation number counted across the
trial's seeds (seed i, evaluation k -> step i * K + k, K evaluations per seed), and the value
reported at that step is the aggregate (mean or quantile) over the seeds run so far at their
k-th evaluation. Every trial runs the same seeds with the same evaluation schedule, so steps
compare across trials, and a trial pruned during its first seed never trains the others.

With `tune.racing`, a trial is ranked after each rung of seeds and runs the next seeds only if
it earned them (racing.py); one that did not stops as pruned ("raced out"). What a trial
scores (one value, or two for return_and_steps) is computed by scoring.py.

A trial is never scored unless every seed it ran completed: an invalid or refused spec, a diverged
run (TrainingError) or a drift stop (`on_alert: stop`) fails the trial with the reason in its
`failure` user attribute; a pruned trial is cancelled cleanly through `run_spec`'s cancel event.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NoReturn

import optuna

from ppo_platform import tracing
from ppo_platform.errors import SpecError, TrainingError
from ppo_platform.settings import Settings, get_settings
from ppo_platform.spec.search import TuneSpec
from ppo_platform.spec.workloads import AnySpec
from ppo_platform.tracking.remote import runs_closed_on_interrupt
from ppo_platform.training.progress import ProgressEvent
from ppo_platform.training.result import RunResult
from ppo_platform.tuning.errors import TrialFailed
from ppo_platform.tuning.racing import RaceDecision, is_rung, race
from ppo_platform.tuning.runs import TrialRun
from ppo_platform.tuning.scoring import (
    SeedCurve,
    aggregate,
    intermediate_sign,
    objective_names,
    seed_scores,
    trial_values,
)
from ppo_platform.tuning.space import base_data, build_trial_spec, sample
from ppo_platform.tuning.study import eval_schedule, evaluations_per_seed
from ppo_platform.workloads import run_experiment

MAX_REASON = 2000


def seeds_of(spec: AnySpec) -> list[int]:
    """The seeds a trial may run: budget.seed, budget.seed + 1, ... (seeds_max of them)."""
    assert spec.tune is not None
    return [spec.budget.seed + i for i in range(spec.tune.seeds_max)]


class PruningReporter:
    """`on_progress` callback of one seed's run: reports evaluations, cancels when pruned."""

    def __init__(
        self,
        trial: optuna.Trial,
        spec: AnySpec,
        tune: TuneSpec,
        seed_index: int,
        earlier: list[SeedCurve],
        cancel: threading.Event,
    ) -> None:
        self.trial, self.tune, self.seed_index, self.earlier = trial, tune, seed_index, earlier
        self.every, self.total = eval_schedule(spec)  # env steps, or updates for ppo_lm
        self.per_seed = evaluations_per_seed(spec)
        self.cancel = cancel
        self.sign = intermediate_sign(tune)
        self.reports = not tune.multi  # Optuna cannot prune a multi-objective trial
        # With racing, the pruner acts on the first rung's seeds; racing judges the others.
        self.may_prune = tune.racing is None or seed_index < tune.seeds_per_trial
        self.curve = SeedCurve()
        self.pruned_at: tuple[int, float] | None = None

    def __call__(self, event: ProgressEvent) -> None:
        if event.kind != "eval":
            return
        self.curve.by_step[event.timesteps] = event.eval_mean
        if not self.every:
            return
        index = min(max(1, round(event.timesteps / self.every)), self.per_seed)
        if index in self.curve.by_index:
            return  # the final evaluation repeats the last periodic one's index
        self.curve.by_index[index] = event.eval_mean
        if not self.reports:
            return
        values = [c.by_index[index] for c in self.earlier if index in c.by_index]
        value = aggregate([self.sign * v for v in [*values, event.eval_mean]], self.tune)
        step = self.seed_index * self.per_seed + index
        self.trial.report(value, step)
        # Pruning at the last evaluation would save nothing: let the seed finish and score.
        if self.may_prune and event.timesteps < self.total and self.trial.should_prune():
            self.pruned_at = (step, value)
            self.cancel.set()


@dataclass
class TrialOutcome:
    seed_scores: list[list[float]] = field(default_factory=list)  # [seed][objective]
    curves: list[SeedCurve] = field(default_factory=list)
    timesteps: int = 0
    alerts: int = 0
    top_causes: list[str] = field(default_factory=list)  # the doctor's, per seed ("": none)

    def primary(self) -> list[float]:
        """Every seed's value of the first objective."""
        return [scores[0] for scores in self.seed_scores]


class TrialObjective:
    """The Optuna objective of a study: each worker process builds its own."""

    def __init__(
        self,
        spec: AnySpec,
        study_name: str,
        parent_run_id: str,
        settings: Settings | None = None,
        on_trial_start: Callable[[], None] | None = None,
        *,
        from_outside: bool,
    ) -> None:
        assert spec.tune is not None
        self.from_outside = from_outside  # the caller's rules, for every trial's spec
        self.spec, self.tune, self.study_name = spec, spec.tune, study_name
        self.parent_run_id = parent_run_id
        self.settings = settings or get_settings()
        self.on_trial_start = on_trial_start
        self.data = base_data(spec)

    def __call__(self, trial: optuna.Trial) -> float | list[float]:
        try:
            with runs_closed_on_interrupt():  # also runs asked for and not held yet
                return self._run_trial(trial)
        except KeyboardInterrupt:  # also one that came before the trial run was open
            trial.set_user_attr("interrupted", True)
            raise

    def _run_trial(self, trial: optuna.Trial) -> float | list[float]:
        if self.on_trial_start is not None:
            self.on_trial_start()  # the trial exists now: other workers may ask for theirs
        trial.set_user_attr("pid", os.getpid())
        trial.set_user_attr("host", socket.gethostname())
        params = sample(trial, self.tune.space)
        invalid = ""
        try:
            spec: AnySpec | None = build_trial_spec(
                self.data, params, from_outside=self.from_outside
            )
        except SpecError as error:
            spec, invalid = None, f"invalid spec: {error.render()}"
        run = TrialRun.start(
            self.settings,
            self.parent_run_id,
            self.study_name,
            trial.number,
            params,
            spec,
        )
        try:  # from here on an interrupt closes the trial run (never left RUNNING)
            if spec is None:  # recorded as a failed trial run with its params, never trained
                self._fail(trial, run, TrialOutcome(), invalid)
            trial.set_user_attr("mlflow_run_id", run.run_id)
            trial.set_user_attr("budget_timesteps", eval_schedule(spec)[1] * self.tune.seeds_max)
            return self._train_seeds(trial, spec, run)
        except (optuna.TrialPruned, TrialFailed):
            raise  # the trial run is already closed with its state and reason
        except KeyboardInterrupt as interrupt:
            tracing.mark("trial interrupted: closing the trial run")
            trial.set_user_attr("interrupted", True)
            run.finish("FAIL", None, 0, 0, "interrupted", interrupt)
            tracing.mark("trial interrupted: trial run closed")
            raise
        except Exception as error:  # a bug or a broken environment: close the run, then crash
            run.finish("FAIL", None, 0, 0, f"{type(error).__name__}: {error}")
            raise

    def _train_seeds(
        self, trial: optuna.Trial, spec: AnySpec, run: TrialRun
    ) -> float | list[float]:
        outcome = TrialOutcome()
        for index, seed in enumerate(seeds_of(self.spec)):
            self._train_seed(trial, spec, run, outcome, index, seed)
            if is_rung(self.tune, index + 1):
                decision = race(trial, self.tune, index + 1, self._score(outcome)[0])
                if not decision.promoted:
                    self._race_out(trial, run, outcome, decision)
        values = self._score(outcome)
        trial.set_user_attr("seeds", seeds_of(self.spec))
        trial.set_user_attr("seed_values", outcome.primary())
        trial.set_user_attr(
            "seed_scores",
            {
                n: [s[i] for s in outcome.seed_scores]
                for i, n in enumerate(objective_names(self.tune))
            },
        )
        run.log_curve(self._curve(outcome.curves))
        run.log_values(dict(zip(objective_names(self.tune), values, strict=True)))
        run.finish("COMPLETE", values[0], outcome.timesteps, outcome.alerts)
        return values if self.tune.multi else values[0]

    def _train_seed(
        self,
        trial: optuna.Trial,
        spec: AnySpec,
        run: TrialRun,
        outcome: TrialOutcome,
        index: int,
        seed: int,
    ) -> None:
        """Train one seed; record its scores, or prune / fail the trial."""
        seed_spec = spec.model_copy(
            update={"budget": spec.budget.model_copy(update={"seed": seed})}
        )
        cancel = threading.Event()
        reporter = PruningReporter(trial, seed_spec, self.tune, index, outcome.curves, cancel)
        try:
            result = run_experiment(
                seed_spec,
                on_progress=reporter,
                cancel=cancel,
                settings=self.settings,
                parent_run_id=run.run_id,
                tags=run.seed_tags(self.study_name, trial.number, seed),
            )
        except TrainingError as error:
            self._fail(trial, run, outcome, f"diverged (seed {seed}): {error}")
        outcome.curves.append(reporter.curve)
        outcome.timesteps += result.timesteps
        outcome.alerts += result.alerts
        outcome.top_causes.append(result.top_cause)
        trial.set_user_attr("timesteps", outcome.timesteps)
        trial.set_user_attr("top_causes", outcome.top_causes)
        if reporter.pruned_at is not None:
            self._prune(trial, run, outcome, seed, reporter.pruned_at)
        if result.outcome != "completed":
            self._fail(trial, run, outcome, _not_completed(result, seed))
        assert result.final_eval_mean is not None
        scores = seed_scores(
            self.tune, result.final_eval_mean, reporter.curve, eval_schedule(spec)[1]
        )
        outcome.seed_scores.append(scores)
        run.log_seed(index, scores[0], result.timesteps, result.alerts)

    def _score(self, outcome: TrialOutcome) -> list[float]:
        return trial_values(self.tune, outcome.seed_scores)

    def _race_out(
        self, trial: optuna.Trial, run: TrialRun, outcome: TrialOutcome, decision: RaceDecision
    ) -> NoReturn:
        reason = f"{decision.describe()}, after {outcome.timesteps} env steps"
        trial.set_user_attr("raced_out", decision.seeds)
        trial.set_user_attr("seed_values", outcome.primary())
        trial.set_user_attr("pruned_reason", reason)
        run.log_curve(self._curve(outcome.curves))
        run.finish("PRUNED", None, outcome.timesteps, outcome.alerts, reason)
        raise optuna.TrialPruned(reason)

    def _curve(self, curves: list[SeedCurve]) -> list[tuple[int, float]]:
        """Aggregate eval return per evaluation, at the first seed's env steps."""
        ordered = [sorted(c.by_step.items()) for c in curves]
        return (
            [
                (step, aggregate([o[i][1] for o in ordered if len(o) > i], self.tune, "maximize"))
                for i, (step, _) in enumerate(ordered[0])
            ]
            if ordered
            else []
        )

    def _prune(
        self,
        trial: optuna.Trial,
        run: TrialRun,
        outcome: TrialOutcome,
        seed: int,
        pruned_at: tuple[int, float],
    ) -> NoReturn:
        step, value = pruned_at
        reason = (
            f"pruned at evaluation step {step} (seed {seed}): intermediate value "
            f"{value:.2f}, after {outcome.timesteps} env steps"
        )
        trial.set_user_attr("pruned_reason", reason)
        run.log_curve(self._curve(outcome.curves))
        run.finish("PRUNED", None, outcome.timesteps, outcome.alerts, reason)
        raise optuna.TrialPruned(reason)

    def _fail(
        self, trial: optuna.Trial, run: TrialRun, outcome: TrialOutcome, reason: str
    ) -> NoReturn:
        reason = reason[:MAX_REASON]
        trial.set_user_attr("failure", reason)
        trial.set_user_attr("timesteps", outcome.timesteps)
        run.finish("FAIL", None, outcome.timesteps, outcome.alerts, reason)
        raise TrialFailed(reason)


def _not_completed(result: RunResult, seed: int) -> str:
    if result.outcome == "stopped_by_alert":
        return f"stopped by a diagnostics alert (seed {seed}): {result.message}"
    return f"{result.outcome} (seed {seed}): {result.message}"
