"""N worker processes, each calling `study.optimize` on the one shared storage.

Processes come from the spawn context (no forked torch or MLflow state) and train with one
torch thread each. A lock shared by the local workers is held from the budget check until the
trial exists in the storage, so local workers never start more than n_trials between them.
Workers on other machines share only the storage and may overshoot by one trial each.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

from ppo_platform.settings import Settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.tuning.errors import TrialFailed, TuningError
from ppo_platform.tuning.study import load_study, may_start_trial, open_storage

LOCK_TIMEOUT = 120.0  # a worker killed while holding the lock must not block the others forever


@dataclass(frozen=True)
class WorkerConfig:
    """Everything a worker process needs (picklable)."""

    spec: ExperimentSpec
    storage_url: str
    study_name: str
    parent_run_id: str
    n_trials: int
    deadline: float | None  # time.time() after which no trial starts (tune.timeout)
    heartbeat_interval: int
    grace_period: int
    settings: Settings  # the parent's: a spawned worker must not re-read its environment


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

    from ppo_platform.tuning.objective import TrialObjective

    storage = open_storage(config.storage_url, config.heartbeat_interval, config.grace_period)
    study = load_study(config.spec, storage, config.study_name, worker_index)
    objective = TrialObjective(
        config.spec, config.study_name, config.parent_run_id, settings=config.settings
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


def _worker_process(config: WorkerConfig, worker_index: int, lock: Any) -> None:
    """Entry point of a spawned worker."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    quiet_logs()
    # On Ctrl-C the trial is marked failed (interrupted); the parent process reports it.
    with contextlib.suppress(KeyboardInterrupt):
        run_worker(config, worker_index, lock)


def quiet_logs() -> None:
    """Optuna's and MLflow's INFO lines would drown the study board."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    optuna.logging.disable_propagation()
    logging.getLogger("mlflow").setLevel(logging.WARNING)


def run_workers(config: WorkerConfig, workers: int) -> None:
    """Run `workers` workers to the end of the study. One worker runs in this process."""
    quiet_logs()
    if workers == 1:
        run_worker(config, 0, threading.Lock())
        return
    context = multiprocessing.get_context("spawn")
    lock = context.Lock()
    processes = [
        context.Process(target=_worker_process, args=(config, i, lock), name=f"tune-worker-{i}")
        for i in range(workers)
    ]
    for process in processes:
        process.start()
    try:
        for process in processes:
            process.join()
    except KeyboardInterrupt:
        # Ctrl-C reached every worker too: give them time to close their runs cleanly.
        for process in processes:
            process.join(timeout=30)
        for process in processes:
            if process.is_alive():
                process.terminate()
        raise
    failed = [p.name for p in processes if p.exitcode not in (0, None)]
    if failed:
        raise TuningError(
            f"worker process(es) {', '.join(failed)} exited with an error "
            "(see their traceback above)."
        )
