"""Inside a tune job's process: the study's progress (trials done / total, best value so far)
read from its Optuna storage every few seconds and written to the job store as `progress`
events, so GET /v1/experiments/{id} shows it while the study runs.

The tuner itself is not touched: this thread only reads the storage the study writes.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from typing import Any

from ppo_platform.jobs.store import JobStore

POLL_SECONDS = 2.0


def study_progress(study: Any, n_trials: int) -> dict[str, Any]:
    """{"trials_done", "trials_total", "trials_running", "best_value", "best_trial"}; done
    counts complete, pruned and failed trials; the best is None until a trial completes."""
    counts = Counter(t.state.name for t in study.get_trials(deepcopy=False))
    progress: dict[str, Any] = {
        "trials_done": counts["COMPLETE"] + counts["PRUNED"] + counts["FAIL"],
        "trials_total": n_trials,
        "trials_running": counts["RUNNING"],
        "best_value": None,
        "best_trial": None,
    }
    try:
        best = study.best_trial
    except ValueError:  # no completed trial yet
        return progress
    if best.value is not None and math.isfinite(best.value):
        progress["best_value"], progress["best_trial"] = float(best.value), best.number
    return progress


class StudyProgress:
    """A thread that mirrors study `study_name`'s progress into job `job_id` until stopped."""

    def __init__(
        self,
        store: JobStore,
        job_id: str,
        storage_url: str,
        study_name: str,
        n_trials: int,
        poll_seconds: float = POLL_SECONDS,
    ) -> None:
        self.store, self.job_id, self.poll_seconds = store, job_id, poll_seconds
        self.storage_url, self.study_name, self.n_trials = storage_url, study_name, n_trials
        self.last: dict[str, Any] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="study-progress", daemon=True)
        self._storage: Any = None

    def __enter__(self) -> StudyProgress:
        self.store.update(self.job_id, progress={"trials_done": 0, "trials_total": self.n_trials})
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)
        self.poll()  # the final count, also when the study ended between two polls

    def _loop(self) -> None:
        while not self._stop.wait(self.poll_seconds):
            self.poll()

    def poll(self) -> None:
        """Write the study's progress if it changed; a study not created yet is skipped."""
        try:
            progress = self._read()
        except Exception:  # the storage is busy or the study not created yet: next time
            return
        if progress is None or progress == self.last:
            return
        self.last = progress
        self.store.append_event(self.job_id, "progress", progress, progress=progress)

    def _read(self) -> dict[str, Any] | None:
        import optuna

        from ppo_platform.tuning.study import open_storage

        if self._storage is None:
            self._storage = open_storage(self.storage_url)
        try:
            study = optuna.load_study(study_name=self.study_name, storage=self._storage)
        except KeyError:
            return None
        return study_progress(study, self.n_trials)
