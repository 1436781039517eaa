"""What a study tells whoever runs it, as data: the parent run, each finished trial with its
value and MLflow run id, and the counts so far. `describe()` is the line a person reads;
listeners (the job service) read the fields.

The events are read from the study's storage, which every worker writes (on any machine): it is
the trials' result channel, so the events cover every worker's trials.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import optuna


@dataclass(frozen=True)
class StudyStarted:
    """The study's MLflow parent run is open; its trials are about to run."""

    study_name: str
    parent_run_id: str
    n_trials: int

    def describe(self) -> str:
        return f"study {self.study_name}: {self.n_trials} trials, parent run {self.parent_run_id}"


@dataclass(frozen=True)
class TrialFinished:
    """One trial ended: COMPLETE with its `value`, PRUNED, or FAIL with its `reason`."""

    number: int
    state: str  # COMPLETE | PRUNED | FAIL
    value: float | None
    run_id: str | None  # the trial's MLflow run
    params: dict[str, Any] = field(default_factory=dict)
    seed_values: tuple[float, ...] = ()
    reason: str = ""  # why it was pruned or failed

    @classmethod
    def of(cls, trial: optuna.trial.FrozenTrial) -> TrialFinished:
        attrs = trial.user_attrs
        value = trial.values[0] if trial.state.name == "COMPLETE" else None
        reason = ""
        if trial.state.name == "PRUNED":
            reason = str(attrs.get("pruned_reason", "pruned"))
        elif trial.state.name != "COMPLETE":
            reason = failure_reason(trial)
        return cls(
            trial.number,
            trial.state.name,
            None if value is None else float(value),
            attrs.get("mlflow_run_id"),
            dict(trial.params),
            tuple(float(v) for v in attrs.get("seed_values", [])),
            reason,
        )

    def describe(self) -> str:
        if self.state == "COMPLETE":
            seeds = ", ".join(f"{v:.4g}" for v in self.seed_values)
            value = math.nan if self.value is None else self.value
            text = f"trial {self.number} complete: value {value:.4g} (seeds: {seeds})"
        elif self.state == "PRUNED":
            text = f"trial {self.number} {self.reason}"
        else:
            text = f"trial {self.number} failed: {self.reason.splitlines()[0]}"
        params = ", ".join(f"{k}={_short(v)}" for k, v in self.params.items())
        return f"{text} [{params}]"


@dataclass(frozen=True)
class StudyProgressed:
    """Trials done (complete, pruned or failed) out of the budget, and the best so far."""

    trials_done: int
    trials_total: int
    trials_running: int
    complete: int
    pruned: int
    failed: int
    best_value: float | None
    best_trial: int | None

    @classmethod
    def of(cls, study: optuna.Study, n_trials: int) -> StudyProgressed:
        counts = Counter(t.state.name for t in study.get_trials(deepcopy=False))
        best_value, best_trial = None, None
        best = _best(study)
        if best is not None and math.isfinite(best.values[0]):
            best_value, best_trial = float(best.values[0]), best.number
        return cls(
            counts["COMPLETE"] + counts["PRUNED"] + counts["FAIL"],
            n_trials,
            counts["RUNNING"],
            counts["COMPLETE"],
            counts["PRUNED"],
            counts["FAIL"],
            best_value,
            best_trial,
        )

    @property
    def progress(self) -> dict[str, Any]:
        """The job row's `progress` for a study."""
        return {
            "trials_done": self.trials_done,
            "trials_total": self.trials_total,
            "trials_running": self.trials_running,
            "best_value": self.best_value,
            "best_trial": self.best_trial,
        }

    def describe(self) -> str:
        """'trials 7/20: 4 complete, 2 pruned, 1 failed, 2 running | best 487.3 (trial 5)'."""
        best = (
            "-" if self.best_value is None else f"{self.best_value:.4g} (trial {self.best_trial})"
        )
        return (
            f"trials {self.trials_done}/{self.trials_total}: {self.complete} complete, "
            f"{self.pruned} pruned, {self.failed} failed, {self.trials_running} running | "
            f"best {best}"
        )


@dataclass(frozen=True)
class VerifyStarted:
    """Held-out verification begins: which trials re-run, on which seeds; `reused` were
    verified already (a resumed study) and do not run again."""

    trials: tuple[int, ...]
    seeds: tuple[int, ...]
    reused: tuple[int, ...] = ()

    def describe(self) -> str:
        again = f" ({len(self.reused)} verified earlier, not re-run)" if self.reused else ""
        return (
            f"verifying the top {len(self.trials)} trial(s) on held-out seeds "
            f"{list(self.seeds)}: trials {list(self.trials)}{again}"
        )


@dataclass(frozen=True)
class TrialVerified:
    """One trial's held-out result: its searched and held-out score with the spread over
    seeds, or the `error` that stopped it. `reused`: from an earlier run of the study."""

    number: int
    searched_value: float | None
    held_out_value: float | None
    seed_values: tuple[float, ...] = ()
    ci95: tuple[float, float] | None = None
    run_id: str | None = None
    error: str = ""
    reused: bool = False

    @classmethod
    def of(cls, result: dict[str, Any], reused: bool = False) -> TrialVerified:
        ci = result.get("ci95")
        return cls(
            int(result["number"]),
            result.get("searched_value"),
            result.get("held_out_value"),
            tuple(float(v) for v in result.get("seed_values") or []),
            None if not ci else (float(ci[0]), float(ci[1])),
            result.get("run_id"),
            str(result.get("error") or ""),
            reused,
        )

    def describe(self) -> str:
        searched = "-" if self.searched_value is None else f"{self.searched_value:.4g}"
        if self.held_out_value is None:
            return f"trial {self.number}: searched {searched}, held-out failed: {self.error}"
        seeds = ", ".join(f"{v:.4g}" for v in self.seed_values)
        earlier = " (verified earlier)" if self.reused else ""
        return (
            f"trial {self.number}: searched {searched}, held-out {self.held_out_value:.4g} "
            f"(seeds: {seeds}){earlier}"
        )


def _best(study: optuna.Study) -> optuna.trial.FrozenTrial | None:
    """The best trial so far (two objectives: the Pareto front's highest return)."""
    if len(study.directions) > 1:
        from ppo_platform.tuning.pareto import pareto_pick

        return pareto_pick(study)
    try:
        return study.best_trial
    except ValueError:  # no completed trial yet
        return None


def failure_reason(trial: optuna.trial.FrozenTrial) -> str:
    """Why a trial failed: its recorded reason, an interruption, or a dead worker."""
    if trial.user_attrs.get("failure"):
        return str(trial.user_attrs["failure"])
    if trial.user_attrs.get("interrupted"):
        return "interrupted"
    return "stale: its worker stopped (no heartbeat), so the trial was failed and retried"


def _short(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


StudyEvent = StudyStarted | TrialFinished | StudyProgressed | VerifyStarted | TrialVerified
StudyListener = Callable[[StudyEvent], None]
