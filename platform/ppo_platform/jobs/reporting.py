"""Inside a job process: progress and alerts to the job store as events, and the watcher that
turns a cancel request (or the death of the service that started the job) into a stop.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from ppo_platform.jobs.store import JobStore
from ppo_platform.training.progress import ProgressEvent

UPDATE_EVERY_SECONDS = 1.0
WATCH_EVERY_SECONDS = 0.5
HEARTBEAT_SECONDS = 5.0  # the job's lease is renewed this often (ServiceSettings.lease_seconds)
SWEEP_DONE = re.compile(r"^\[(\d+)/(\d+)\]")
SWEEP_PARENT = re.compile(r"parent run ([0-9a-f]{32})")


def finite(value: float) -> float | None:
    """JSON has no NaN: a missing number is null."""
    return None if math.isnan(value) or math.isinf(value) else value


class EventWriter:
    """The runner's `on_progress`: updates at most once a second, every eval and alert."""

    def __init__(self, store: JobStore, job_id: str, on_first: Callable[[], None]) -> None:
        self.store, self.job_id, self.on_first = store, job_id, on_first
        self._last_update = 0.0
        self._first = True

    def __call__(self, event: ProgressEvent) -> None:
        if self._first:
            self._first = False
            self.on_first()
        progress = {"timesteps": event.timesteps, "total_timesteps": event.total_timesteps}
        if event.kind == "update":
            now = time.monotonic()
            if now - self._last_update < UPDATE_EVERY_SECONDS:
                return
            self._last_update = now
            diagnostics = {
                "fps": finite(event.fps),
                "ep_rew_mean": finite(event.ep_rew_mean),
                "approx_kl": finite(event.approx_kl),
                "clip_fraction": finite(event.clip_fraction),
                "explained_variance": finite(event.explained_variance),
                "kl_beta": finite(event.kl_beta),
            }
            self.store.append_event(
                self.job_id,
                "progress",
                {**progress, **diagnostics},
                progress=progress,
                diagnostics=diagnostics,
            )
        elif event.kind == "eval":
            data = {**progress, "eval_mean": finite(event.eval_mean)}
            self.store.append_event(self.job_id, "eval", data, progress=progress)
        elif event.kind == "alert":
            self.store.append_event(self.job_id, "alert", {**progress, "message": event.message})

    def sweep_line(self, line: str) -> None:
        """run_sweep's `on_event`: a log event; `[k/n]` lines count finished runs."""
        changes: dict[str, Any] = {}
        if done := SWEEP_DONE.match(line):
            changes["progress"] = {"runs_done": int(done[1]), "runs_total": int(done[2])}
        if parent := SWEEP_PARENT.search(line):
            changes["mlflow_run_id"] = parent[1]
        self.store.append_event(self.job_id, "log", {"message": line}, **changes)


class Watcher:
    """A thread that stops the job when its cancel is requested or its service died.

    A run stops through the runner's cancel event (checkpoint kept, MLflow run KILLED); sweeps
    and studies get SIGINT on the job's process group, which their workers handle the same way.
    """

    def __init__(self, store: JobStore, job_id: str, interrupt: bool) -> None:
        self.store, self.job_id, self.interrupt = store, job_id, interrupt
        self.cancel = threading.Event()
        self.cancelled = False
        self.orphaned = False
        self._parent = os.getppid()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="job-watcher", daemon=True)

    def __enter__(self) -> Watcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self.cancel.is_set()

    def _loop(self) -> None:
        beat = 0.0
        while not self._stop.wait(WATCH_EVERY_SECONDS):
            if time.monotonic() - beat >= HEARTBEAT_SECONDS:
                beat = time.monotonic()
                self._beat()
            if os.getppid() != self._parent:
                self.orphaned = True
            elif self._cancel_requested():
                self.cancelled = True
            else:
                continue
            self._trigger()
            return

    def _beat(self) -> None:
        with contextlib.suppress(Exception):  # the store is busy or gone: renew next time
            self.store.beat(self.job_id)

    def _cancel_requested(self) -> bool:
        try:
            return self.store.get(self.job_id).cancel_requested
        except Exception:  # the store is busy or gone: look again next time
            return False

    def _trigger(self) -> None:
        self.cancel.set()
        if self.interrupt:
            os.killpg(os.getpgid(0), signal.SIGINT)
