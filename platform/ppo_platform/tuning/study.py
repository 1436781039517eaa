"""Optuna storage and study: where trials live, how a study resumes, what a dead worker leaves.

Default storage on one machine: an Optuna journal file under the platform's home. Journal
writes are appends under a file lock, so several worker processes write it without SQLite's
"database is locked" (optuna#820). Any SQLAlchemy URL (sqlite:///, postgresql://, mysql://)
selects Optuna's RDBStorage instead, so workers on several machines can join one study.

Both storages get a heartbeat: a RUNNING trial whose worker stopped beating for
`grace_period` seconds is failed and retried once (Optuna's RetryHeartbeatStaleTrialCallback).
RDBStorage has this built in; the journal storage gets it from `HeartbeatJournalStorage`.

Errors: a storage URL that is no URL, a host name that does not exist, an unwritable journal
folder or a missing driver is bad input (BadInputError, --storage); a database whose host
exists but does not answer is UnavailableError; a study name taken by another spec is a
ConflictError (--study).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ppo_platform.errors import (
    BadInputError,
    ConflictError,
    SpecError,
    SpecIssue,
    UnavailableError,
)
from ppo_platform.settings import JOURNAL_SCHEME, Settings, masked_url
from ppo_platform.spec.lm import LMExperimentSpec
from ppo_platform.spec.names import refuse_unknown_host
from ppo_platform.spec.workloads import AnySpec
from ppo_platform.tuning.space import encode, grid_search_space, grid_size

if TYPE_CHECKING:
    import optuna
    from optuna.storages import BaseStorage

HEARTBEAT_ATTR = "ppo_platform:heartbeat"
FINGERPRINT_ATTR = "ppo_platform:fingerprint"
PARENT_RUN_ATTR = "ppo_platform:mlflow_parent_run_id"
HEARTBEAT_SECONDS = 10
GRACE_SECONDS = 60


def default_storage_url(settings: Settings) -> str:
    """The storage of studies (`Settings.optuna_storage`)."""
    return settings.optuna_storage


def redact(url: str) -> str:
    """The storage URL without its password (it goes into MLflow tags and summaries)."""
    return masked_url(url)


def _journal_storage_class() -> type:
    # BaseHeartbeat is the one private Optuna import: Optuna 5.0 has no public way to give a
    # storage a heartbeat. `study.optimize` and the public `fail_stale_trials` act only on
    # instances of that class (RDBStorage is one; JournalStorage is not: optuna#6615).
    from optuna.exceptions import UpdateFinishedTrialError
    from optuna.storages import JournalStorage
    from optuna.storages._heartbeat import BaseHeartbeat
    from optuna.trial import TrialState

    class HeartbeatJournalStorage(JournalStorage, BaseHeartbeat):
        """A journal storage whose running trials beat, so a dead worker's trial is noticed."""

        def __init__(
            self, backend: Any, heartbeat_interval: int, grace_period: int, stale_callback: Any
        ) -> None:
            super().__init__(backend)
            self.heartbeat_interval, self.grace_period = heartbeat_interval, grace_period
            self.stale_callback = stale_callback

        def record_heartbeat(self, trial_id: int) -> None:
            # A trial that just finished has nothing left to keep alive.
            with contextlib.suppress(UpdateFinishedTrialError):
                self.set_trial_system_attr(trial_id, HEARTBEAT_ATTR, time.time())

        def _get_stale_trial_ids(self, study_id: int) -> list[int]:
            now = time.time()
            stale = []
            for trial in self.get_all_trials(
                study_id, deepcopy=False, states=(TrialState.RUNNING,)
            ):
                last = trial.system_attrs.get(HEARTBEAT_ATTR)
                if last is None and trial.datetime_start is not None:
                    last = trial.datetime_start.timestamp()  # died before its first beat
                if last is not None and now - last > self.grace_period:
                    stale.append(
                        self.get_trial_id_from_study_id_trial_number(study_id, trial.number)
                    )
            return stale

        def get_heartbeat_interval(self) -> int | None:
            return self.heartbeat_interval

        def get_heartbeat_stale_trial_callback(self) -> Any:
            return self.stale_callback

    return HeartbeatJournalStorage


def _storage_issue(url: str, message: str, fix: str) -> BadInputError:
    return BadInputError([SpecIssue("--storage", message, redact(url), fix=fix)])


def open_storage(
    url: str, heartbeat_interval: int = HEARTBEAT_SECONDS, grace_period: int = GRACE_SECONDS
) -> BaseStorage:
    """`journal:/path/file` or any SQLAlchemy URL, with stale-trial detection on."""
    from optuna.exceptions import ExperimentalWarning
    from optuna.storages import RetryHeartbeatStaleTrialCallback
    from optuna.storages.journal import JournalFileBackend

    warnings.filterwarnings("ignore", category=ExperimentalWarning)
    retry = RetryHeartbeatStaleTrialCallback(max_retry=1)
    if url.startswith(JOURNAL_SCHEME):
        path = Path(url.removeprefix(JOURNAL_SCHEME).removeprefix("//"))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BadInputError(
                [
                    SpecIssue(
                        "--storage",
                        f"cannot create the journal's folder: {exc.strerror}.",
                        str(path.parent),
                        fix="pass journal:PATH in a writable folder.",
                    )
                ]
            ) from None
        return _journal_storage_class()(
            JournalFileBackend(str(path)), heartbeat_interval, grace_period, retry
        )
    if "://" not in url:
        raise _storage_issue(
            url,
            "is neither journal:PATH nor a database URL.",
            "use e.g. journal:/tmp/studies.journal, "
            "sqlite:///studies.db or postgresql://user:pw@host/db.",
        )
    return _rdb_storage(url, heartbeat_interval, grace_period, retry)


def _rdb_storage(url: str, heartbeat_interval: int, grace_period: int, retry: Any) -> BaseStorage:
    """Optuna's RDBStorage; a bad URL, unknown host or missing driver is bad input, a silent
    database is unavailable."""
    from optuna.storages import RDBStorage
    from sqlalchemy.exc import ArgumentError, OperationalError

    refuse_unknown_host(
        url, "--storage", "check the host name in the URL, or use a journal:PATH storage."
    )
    engine_kwargs = {"connect_args": {"timeout": 60}} if url.startswith("sqlite") else {}
    try:
        return RDBStorage(
            url,
            engine_kwargs=engine_kwargs,
            heartbeat_interval=heartbeat_interval,
            grace_period=grace_period,
            heartbeat_stale_trial_callback=retry,
        )
    except ArgumentError as exc:
        raise _storage_issue(
            url, f"is not a database URL SQLAlchemy knows: {exc}.", "check the URL's scheme."
        ) from None
    except ImportError:
        raise _storage_issue(
            url,
            "needs a database driver that is not installed.",
            "install the driver for this database (e.g. psycopg for postgresql://).",
        ) from None
    except OperationalError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else type(exc).__name__
        raise UnavailableError(
            f"the Optuna storage (--storage, or PPO_PLATFORM_OPTUNA_STORAGE_URL) {redact(url)} "
            f"does not answer: {reason}. Fix: check that the database "
            "is up and reachable, or use a journal:PATH storage."
        ) from None


def make_sampler(spec: AnySpec, worker_index: int = 0) -> optuna.samplers.BaseSampler:
    """The spec's sampler with every setting pinned (Optuna 5 changed TPE's defaults).

    Each worker gets seed + worker_index: identical seeds would make parallel workers
    propose identical startup trials.
    """
    import optuna

    assert spec.tune is not None
    sampler, seed = spec.tune.sampler, spec.tune.sampler.seed + worker_index
    if sampler.type == "tpe":
        return optuna.samplers.TPESampler(
            n_startup_trials=sampler.n_startup_trials,
            seed=seed,
            multivariate=True,
            constant_liar=True,
            n_ei_candidates=24,
        )
    if sampler.type == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if sampler.type == "grid":
        return optuna.samplers.GridSampler(grid_search_space(spec.tune), seed=seed)
    try:
        import cmaes  # noqa: F401
    except ImportError:
        raise SpecError(
            [
                SpecIssue(
                    "tune.sampler.type",
                    "needs the `cmaes` package.",
                    "cmaes",
                    fix="pip install cmaes, or use sampler type tpe.",
                )
            ]
        ) from None
    return optuna.samplers.CmaEsSampler(
        n_startup_trials=sampler.n_startup_trials,
        seed=seed,
        warn_independent_sampling=False,
        independent_sampler=optuna.samplers.RandomSampler(seed=seed),
    )


def eval_schedule(spec: AnySpec) -> tuple[int, int]:
    """(evaluation interval, budget) of one seed's run: env steps for a gymnasium spec,
    PPO updates for a `ppo_lm` spec (its progress events count updates)."""
    if isinstance(spec, LMExperimentSpec):
        return spec.evaluation.every_updates, spec.budget.updates
    return spec.evaluation.every_timesteps, spec.budget.total_timesteps


def budget_unit(spec: AnySpec) -> str:
    """What `eval_schedule` counts, in words."""
    return "updates" if isinstance(spec, LMExperimentSpec) else "env steps"


def evaluations_per_seed(spec: AnySpec) -> int:
    """Periodic evaluations in one training run: the pruner's steps per seed."""
    every, total = eval_schedule(spec)
    return max(1, total // every) if every else 1


def make_pruner(spec: AnySpec) -> optuna.pruners.BasePruner:
    """Steps are evaluation numbers counted across a trial's seeds (see objective.py)."""
    import optuna

    assert spec.tune is not None
    pruner = spec.tune.pruner
    if spec.tune.multi:  # Optuna cannot prune a multi-objective trial
        return optuna.pruners.NopPruner()
    first_rung = max(1, pruner.n_warmup_evaluations)
    if pruner.type == "median":
        return optuna.pruners.MedianPruner(
            n_startup_trials=pruner.n_startup_trials, n_warmup_steps=pruner.n_warmup_evaluations
        )
    if pruner.type == "successive_halving":
        return optuna.pruners.SuccessiveHalvingPruner(
            min_resource=first_rung, reduction_factor=pruner.reduction_factor
        )
    if pruner.type == "hyperband":
        max_steps = evaluations_per_seed(spec) * spec.tune.seeds_max
        return optuna.pruners.HyperbandPruner(
            min_resource=first_rung,
            max_resource=max(first_rung, max_steps),
            reduction_factor=pruner.reduction_factor,
        )
    return optuna.pruners.NopPruner()


def fingerprint(spec: AnySpec) -> str:
    """What a study's trials depend on: a resumed study must not silently change it."""
    assert spec.tune is not None
    tune = spec.tune
    parts: dict[str, Any] = {
        "spec": spec.spec_hash(),
        "space": tune.model_dump(mode="json")["space"],
        "metric": tune.metric or "final_eval_return",
        "seeds": tune.seeds_per_trial,
        "aggregate": tune.aggregate,
        "quantile": tune.quantile,
    }
    if tune.start_points:
        parts["start_points"] = tune.start_points
    # Added only when set: a study started before these fields existed still resumes.
    if tune.objective is not None:
        parts["objective"] = tune.objective.model_dump(mode="json")
    if tune.racing is not None:
        parts["racing"] = tune.racing.model_dump(mode="json")
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def load_study(
    spec: AnySpec, storage: BaseStorage, study_name: str, worker_index: int = 0
) -> optuna.Study:
    """Create the study, or load it to continue (`load_if_exists`)."""
    import optuna

    assert spec.tune is not None
    return optuna.create_study(
        storage=storage,
        study_name=study_name,
        load_if_exists=True,
        directions=[optuna.study.StudyDirection[d.upper()] for d in spec.tune.directions],
        pruner=make_pruner(spec),
        sampler=make_sampler(spec, worker_index),
    )


def prepare_study(spec: AnySpec, storage: BaseStorage, study_name: str) -> optuna.Study:
    """Create or continue a study; refuse to continue one started from a different spec."""
    study = load_study(spec, storage, study_name)
    assert spec.tune is not None
    expected = fingerprint(spec)
    found = study.user_attrs.get(FINGERPRINT_ATTR)
    if found is None:  # a new study: its start points run first
        study.set_user_attr(FINGERPRINT_ATTR, expected)
        for point in spec.tune.start_points:
            study.enqueue_trial(
                {path: encode(spec.tune.space[path], v) for path, v in point.items()},
                skip_if_exists=True,
            )
    elif found != expected or [d.name.lower() for d in study.directions] != spec.tune.directions:
        raise ConflictError(
            [
                SpecIssue(
                    "--study",
                    f"study {study_name!r} already exists with a different spec, search "
                    "space, metric or direction: its trials cannot be continued with this one.",
                    study_name,
                    fix="pass another --study NAME, or run the spec it was started with.",
                )
            ]
        )
    return study


def trials_used(study: optuna.Study) -> int:
    """Trials that count toward n_trials: finished or running, except failures that are
    re-run (a stale trial's retry) or that an interruption caused."""
    from optuna.trial import TrialState

    trials = study.get_trials(deepcopy=False)
    retried = {n for t in trials for n in t.system_attrs.get("retry_history", [])}
    used = 0
    for trial in trials:
        if trial.state == TrialState.WAITING:
            continue
        if trial.state == TrialState.FAIL and (
            trial.number in retried or trial.user_attrs.get("interrupted")
        ):
            continue
        used += 1
    return used


def may_start_trial(study: optuna.Study, n_trials: int) -> bool:
    """A retried (waiting) trial always runs; a new one or a start point only while the
    budget lasts."""
    from optuna.trial import TrialState

    waiting = study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
    if any("failed_trial" in t.system_attrs for t in waiting):
        return True
    return trials_used(study) < n_trials


def study_budget(spec: AnySpec) -> int:
    """n_trials, capped by the grid's size for the grid sampler (it cannot do more)."""
    assert spec.tune is not None
    if spec.tune.sampler.type == "grid":
        return min(spec.tune.n_trials, grid_size(spec.tune))
    return spec.tune.n_trials
