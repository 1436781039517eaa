"""Inside a job process: the typed events of a run, a sweep or a study to the job store as
job events and row changes, and the watcher that turns a cancel request (or the death of the
service that started the job) into a stop.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ppo_platform.jobs.store import JobStore
from ppo_platform.training.progress import ProgressEvent

if TYPE_CHECKING:
    from ppo_platform.jobs.bounds import DeadManSwitch
    from ppo_platform.sweeps.events import SweepEvent
    from ppo_platform.tuning.events import StudyEvent, TrialVerified, VerifyStarted

UPDATE_EVERY_SECONDS = 1.0
WATCH_EVERY_SECONDS = 0.5
HEARTBEAT_SECONDS = 5.0  # the job's lease is renewed this often (ServiceSettings.lease_seconds)


def finite(value: float) -> float | None:
    """JSON has no NaN: a missing number is null."""
    return None if math.isnan(value) or math.isinf(value) else value


class EventWriter:
    """The runner's `on_progress` and the sweep's `on_event`: typed events become job events
    and row changes, field by field. No text is parsed: the job's MLflow run id comes only
    from a `started` event's `run_id` or a `SweepStarted`'s `parent_run_id`."""

    def __init__(self, store: JobStore, job_id: str) -> None:
        self.store, self.job_id = store, job_id
        self._last_update = 0.0

    def __call__(self, event: ProgressEvent) -> None:
        progress = {"timesteps": event.timesteps, "total_timesteps": event.total_timesteps}
        if event.kind == "started":
            resolved = {"resolved": dict(event.resolved)} if event.resolved else {}
            self.store.update(
                self.job_id, mlflow_run_id=event.run_id, mlflow_run_ids=[event.run_id], **resolved
            )
        else:
            self.training_event(event, progress)

    def training_event(
        self, event: ProgressEvent, progress: dict[str, int], more: dict[str, Any] | None = None
    ) -> None:
        """An update (throttled), evaluation or alert of a run, at `progress`; `more`: fields
        the event's data carries besides (a batch's seed)."""
        more = more or {}
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
                "kl_ref": finite(event.kl_ref),
            }
            self.store.append_event(
                self.job_id,
                "progress",
                {**progress, **diagnostics, **more},
                progress=progress,
                diagnostics=diagnostics,
            )
        elif event.kind == "eval":
            # At the evaluated step (an asynchronous one's snapshot): the job's progress is
            # moved by the updates, never back by a late evaluation.
            data = {**progress, "eval_mean": finite(event.eval_mean), **more}
            self.store.append_event(self.job_id, "eval", data)
        elif event.kind == "alert":
            data = {**progress, "message": event.message, **more}
            self.store.append_event(self.job_id, "alert", data)

    def seeds(self, count: int, per_seed: int) -> SeedsProgress:
        """The events of a batch of `count` seeds of `per_seed` env steps each."""
        return SeedsProgress(self, count, per_seed)

    def sweep_event(self, event: SweepEvent) -> None:
        """A sweep's event: the parent run id and member outcomes are taken from its fields;
        its text (`describe()`) is stored for people to read, never read back."""
        from ppo_platform.sweeps.events import MemberFinished, SweepStarted

        message = event.describe()
        if isinstance(event, SweepStarted):
            progress = {"runs_done": event.finished_earlier, "runs_total": event.members}
            self.store.append_event(
                self.job_id,
                "log",
                {"message": message, "parent_run_id": event.parent_run_id},
                mlflow_run_id=event.parent_run_id,
                progress=progress,
            )
        elif isinstance(event, MemberFinished):
            outcome = event.outcome
            progress = {"runs_done": event.runs_done, "runs_total": event.runs_total}
            member = {
                "name": outcome.member.spec.name,
                "key": outcome.member.key,
                "status": outcome.status,
                "run_id": outcome.run_id,
                "final_eval_mean": outcome.final_eval_mean,
                "error": outcome.error,
            }
            data = {**progress, "member": member, "message": message}
            self.store.append_event(self.job_id, "member", data, progress=progress)
        else:
            self.store.append_event(self.job_id, "log", {"message": message})

    def study_event(self, event: StudyEvent) -> None:
        """A study's event: its parent run id, each finished trial (value, run id) and the
        counts, taken from the fields."""
        from ppo_platform.tuning.events import StudyProgressed, StudyStarted, TrialFinished
        from ppo_platform.tuning.events import TrialVerified as Verified
        from ppo_platform.tuning.events import VerifyStarted as Verifying

        if isinstance(event, StudyStarted):
            progress = {"trials_done": 0, "trials_total": event.n_trials}
            data = {"message": event.describe(), "parent_run_id": event.parent_run_id}
            self.store.append_event(
                self.job_id, "log", data, mlflow_run_id=event.parent_run_id, progress=progress
            )
        elif isinstance(event, TrialFinished):
            trial = {
                "number": event.number,
                "state": event.state,
                "value": None if event.value is None else finite(event.value),
                "run_id": event.run_id,
                "reason": event.reason,
                "message": event.describe(),
            }
            self.store.append_event(self.job_id, "trial", trial)
        elif isinstance(event, StudyProgressed):
            progress = event.progress
            self.store.append_event(self.job_id, "progress", progress, progress=progress)
        elif isinstance(event, Verifying | Verified):
            self.store.append_event(self.job_id, "verify", verify_data(event))
        else:  # any other study event: its text, for people
            self.store.append_event(self.job_id, "log", {"message": event.describe()})


class SeedsProgress:
    """A batch of seeds' events (`run_many`'s `progress_for`): each seed's run joins the job's
    runs as it starts (the job's own run is the batch's parent, set by `parent`); progress is
    the env steps of every seed together; events name their seed."""

    def __init__(self, writer: EventWriter, count: int, per_seed: int) -> None:
        self.writer, self.total = writer, count * per_seed
        self.steps: dict[int, int] = {}
        self.runs: list[str] = []
        self.parent_run_id = ""

    def parent(self, run_id: str) -> None:
        self.parent_run_id = run_id
        self.writer.store.update(self.writer.job_id, mlflow_run_id=run_id, mlflow_run_ids=[])

    def progress(self) -> dict[str, int]:
        return {"timesteps": sum(self.steps.values()), "total_timesteps": self.total}

    def __call__(self, seed: int) -> Callable[[ProgressEvent], None]:
        def report(event: ProgressEvent) -> None:
            self.steps[seed] = max(self.steps.get(seed, 0), event.timesteps)
            progress = self.progress()
            if event.kind == "started":
                self.runs.append(event.run_id)
                self.writer.store.update(self.writer.job_id, mlflow_run_ids=list(self.runs))
            else:
                self.writer.training_event(event, progress, {"seed": seed})

        return report


def _number(value: float | None) -> float | None:
    return None if value is None else finite(value)


def verify_data(event: VerifyStarted | TrialVerified) -> dict[str, Any]:
    """A `verify` job event's data: the verification's fields, `stage` telling them apart."""
    from ppo_platform.tuning.events import VerifyStarted as Verifying

    if isinstance(event, Verifying):
        fields: dict[str, Any] = {
            "stage": "started",
            "trials": list(event.trials),
            "seeds": list(event.seeds),
            "reused": list(event.reused),
        }
    else:
        fields = {
            "stage": "trial",
            "number": event.number,
            "searched_value": _number(event.searched_value),
            "held_out_value": _number(event.held_out_value),
            "seed_values": [finite(v) for v in event.seed_values],
            "ci95": None if event.ci95 is None else [finite(v) for v in event.ci95],
            "run_id": event.run_id,
            "error": event.error,
            "reused": event.reused,
        }
    return fields | {"message": event.describe()}


class Watcher:
    """A thread that stops the job when its cancel is requested, the dispatcher ended it (its
    wall-clock bound) or its service died; while the service lives it renews the job's
    dead-man switch (`jobs/bounds.py`), and stops renewing it once the service is gone.

    A run stops through the runner's cancel event (checkpoint kept, MLflow run KILLED); sweeps
    and studies get SIGINT on the job's process group, which their workers handle the same way.
    """

    def __init__(
        self, store: JobStore, job_id: str, interrupt: bool, switch: DeadManSwitch | None = None
    ) -> None:
        self.store, self.job_id, self.interrupt = store, job_id, interrupt
        self.switch = switch
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
        # Joined: a thread still in its last look could see the status the job is about to be
        # finished with and interrupt the process group after the job has ended.
        self._thread.join(timeout=5 * WATCH_EVERY_SECONDS)

    @property
    def stopping(self) -> bool:
        return self.cancel.is_set()

    def _loop(self) -> None:
        beat = 0.0
        while not self._stop.wait(WATCH_EVERY_SECONDS):
            if os.getppid() != self._parent:
                self.orphaned = True  # the switch is not renewed again: the lease runs out
                self._trigger()
                return
            if self.switch is not None:
                self.switch.renew()
            if time.monotonic() - beat >= HEARTBEAT_SECONDS:
                beat = time.monotonic()
                self._beat()
            if self._stop_requested():
                self.cancelled = True
                self._trigger()
            # After a stop the switch is still renewed: the dispatcher kills after its grace.

    def _beat(self) -> None:
        with contextlib.suppress(Exception):  # the store is busy or gone: renew next time
            self.store.beat(self.job_id)

    def _stop_requested(self) -> bool:
        """A cancel, or the job ended by the dispatcher (past its wall-clock bound)."""
        if self.cancel.is_set():
            return False  # asked once already
        try:
            job = self.store.get(self.job_id)
        except Exception:  # the store is busy or gone: look again next time
            return False
        return bool(job.cancel_requested) or job.status != "running"

    def _trigger(self) -> None:
        if self._stop.is_set():
            return  # the job's work is over: nothing left to interrupt
        self.cancel.set()
        if self.interrupt:
            os.killpg(os.getpgid(0), signal.SIGINT)
