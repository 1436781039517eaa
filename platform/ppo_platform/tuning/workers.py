"""N worker processes, each calling `study.optimize` on the one shared storage.

The workers run as tasks on the local Executor (spawned processes, pinned threads) or on Ray. A
lock is held from the budget check until the trial exists in the storage, so the workers never
start more than n_trials between them: local workers share a multiprocessing lock; Ray workers,
which share only the storage, lock through it (storage_lock.py). A worker whose process or node
died runs again (up to `max_attempts`); its trial is failed as stale and retried.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import threading
import time
from dataclasses import dataclass
from typing import Any

from ppo_platform import tracing
from ppo_platform.execution.base import Task
from ppo_platform.execution.choose import pool_executor
from ppo_platform.execution.local import run_tasks
from ppo_platform.settings import Settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.machine import task_gpus
from ppo_platform.spec.workloads import AnySpec
from ppo_platform.tuning.errors import TrialFailed, TuningError
from ppo_platform.tuning.storage_lock import storage_lock
from ppo_platform.tuning.study import load_study, may_start_trial, open_storage

LOCK_TIMEOUT = 120.0  # a worker killed while holding the lock must not block the others forever

logger = logging.getLogger(__name__)
_shared_lock: Any = None  # the local workers' lock, set in each worker process by _share_lock


@dataclass(frozen=True)
class WorkerConfig:
    """Everything a worker process needs (picklable)."""

    spec: AnySpec
    storage_url: str
    study_name: str
    parent_run_id: str
    n_trials: int
    deadline: float | None  # time.time() after which no trial starts (tune.timeout)
    heartbeat_interval: int
    grace_period: int
    settings: Settings  # the parent's: a spawned worker must not re-read its environment
    from_outside: bool  # the study's caller's rules: each trial is checked as its spec was


class _OnceReleased:
    """Releases the shared lock once: when the trial starts, or when the attempt ends."""

    def __init__(self, lock: Any, held: bool) -> None:
        self.lock, self.held = lock, held

    def __call__(self) -> None:
        if self.held:
            self.held = False
            self.lock.release()


def run_worker(config: WorkerConfig, worker_index: int, lock: Any) -> int:
    """Run trials until the budget or deadline is reached; returns trials this worker ran."""
    from optuna.storages import fail_stale_trials

    from ppo_platform.tuning.objective import TrialObjective  # heavy: torch and SB3

    storage = open_storage(config.storage_url, config.heartbeat_interval, config.grace_period)
    study = load_study(config.spec, storage, config.study_name, worker_index)
    objective = TrialObjective(
        config.spec,
        config.study_name,
        config.parent_run_id,
        settings=config.settings,
        from_outside=config.from_outside,
    )
    ran = 0
    while config.deadline is None or time.time() < config.deadline:
        release = _OnceReleased(lock, lock.acquire(timeout=LOCK_TIMEOUT))
        objective.on_trial_start = release
        try:
            fail_stale_trials(study)  # a dead worker's trial must not hold a budget slot
            if not may_start_trial(study, config.n_trials):
                break
            study.optimize(objective, n_trials=1, catch=(TrialFailed,), gc_after_trial=False)
            ran += 1
        finally:
            release()
    return ran


def _share_lock(lock: Any) -> None:
    """Worker initializer: a multiprocessing Lock can only be inherited, not sent with a task."""
    global _shared_lock
    _shared_lock = lock


def _worker_task(config: WorkerConfig, worker_index: int) -> int:
    """One worker, run as a task in a pool process; returns the trials it ran."""
    quiet_logs()
    # On Ctrl-C the trial is marked failed (interrupted); the parent process reports it.
    # On a Ray worker no lock is inherited: the workers lock through their storage.
    owned = (
        None if _shared_lock is not None else storage_lock(config.storage_url, config.study_name)
    )
    lock = _shared_lock or owned or threading.Lock()
    try:
        with contextlib.suppress(KeyboardInterrupt):
            return run_worker(config, worker_index, lock)
        tracing.mark("tune worker: interrupted, returning")
        return 0
    finally:
        if owned is not None:
            owned.close()


class _NoInterruptTraceback(logging.Filter):
    """Ctrl-C or SIGTERM during a trial: the board reports the trial as interrupted; Optuna's
    warning would add the interrupt's traceback to what the user sees."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, KeyboardInterrupt)


def quiet_logs() -> None:
    """Optuna's and MLflow's INFO lines would drown the study board."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    optuna.logging.disable_propagation()
    logging.getLogger("mlflow").setLevel(logging.WARNING)
    for handler in logging.getLogger("optuna").handlers:
        if not any(isinstance(f, _NoInterruptTraceback) for f in handler.filters):
            handler.addFilter(_NoInterruptTraceback())


def _lost_note(result: Any) -> None:
    if result.lost:
        logger.error("%s: its worker died on every attempt (last: %s)", result.key, result.error)


def run_workers(config: WorkerConfig, workers: int) -> None:
    """Run `workers` workers to the end of the study. One worker runs in this process."""
    quiet_logs()
    if workers == 1:
        run_worker(config, 0, threading.Lock())
        return
    lock = multiprocessing.get_context("spawn").Lock()
    spec = config.spec  # a ppo_lm trial trains on the CPU
    gpus = task_gpus(spec.policy.device) if isinstance(spec, ExperimentSpec) else 0.0
    tasks = [
        Task(f"tune-worker-{i}", _worker_task, (config, i), num_gpus=gpus) for i in range(workers)
    ]
    executor = pool_executor(config.settings, workers, initializer=_share_lock, initargs=(lock,))
    # On Ctrl-C or SIGTERM, the workers get time to close their runs cleanly.
    results = run_tasks(
        tasks, executor=executor, max_attempts=config.settings.max_attempts, on_done=_lost_note
    )
    failed = [result for result in results if not result.ok]
    for result in failed:
        if result.traceback:
            logger.error("%s failed:\n%s", result.key, result.traceback)
    if failed:
        raise TuningError(
            "worker process(es) failed: "
            + "; ".join(f"{result.key}: {result.error}" for result in failed)
        )
