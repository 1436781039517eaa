"""The dispatcher: a thread that starts queued jobs through an Executor and records how they end.

One dispatcher per job store on a machine (a lock file under the home decides which, so
`serve --workers N` runs one). On start it recovers: jobs left `running` by a dead service are
re-queued once their old process is gone, and resume from their checkpoints when dispatched.
"""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import IO, Any, TypeVar

from sqlalchemy.exc import OperationalError

from ppo_platform.execution.base import Executor, Task, TaskResult
from ppo_platform.execution.choose import job_executor
from ppo_platform.jobs.admission import MemoryAdmission, job_memory
from ppo_platform.jobs.bounds import JobBounds, job_bounds
from ppo_platform.jobs.config import ServiceSettings
from ppo_platform.jobs.store import JobStore, age_seconds
from ppo_platform.jobs.worker import ORPHANED, run_job
from ppo_platform.settings import get_settings
from ppo_platform.spec.machine import task_gpus

log = logging.getLogger(__name__)
TICK_SECONDS = 0.25
LOCK_RETRY_SECONDS = 2.0
RECOVERY_WAIT_SECONDS = 30.0
MAX_BACKOFF_SECONDS = 10.0
REQUEUE_REASON = "the service stopped while it ran; it resumes from its last checkpoint"
LOST_REASON = "its worker died ({error}); it resumes from its last checkpoint"
GIVEN_UP = (
    "its worker died on each of its {attempts} attempts (last: {error}); not re-queued again "
    "(at most PPO_PLATFORM_MAX_ATTEMPTS={limit} attempts)"
)
LEASE_REASON = "its process stopped renewing its lease; it resumes from its last checkpoint"
HEARTBEAT_SECONDS = 2.0  # the dispatching process writes its pid and time into the lock file
HEARTBEAT_STALE_SECONDS = 10.0
STORE_ATTEMPTS = 5
STORE_BACKOFF_SECONDS = 0.1
T = TypeVar("T")


def process_alive(pid: int | None) -> bool:
    """True if `pid` runs (a zombie, dead but not reaped by its new parent, counts as gone)."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    return "\nState:\tZ" not in state


class Dispatcher:
    """Runs queued jobs, at most `concurrency` at once and `running_per_key()` per owner,
    taking turns between owners."""

    def __init__(
        self,
        store: JobStore,
        service: ServiceSettings,
        lock_path: Path,
        executor: Executor | None = None,
        torch_threads: int = 1,
        max_attempts: int | None = None,
    ) -> None:
        self.store, self.service, self.lock_path = store, service, lock_path
        # Runs of a job whose worker keeps dying: the one `max_attempts` setting (Settings).
        self.max_attempts = max_attempts or get_settings().max_attempts
        self.concurrency = service.jobs_concurrency
        self.executor = executor or job_executor(get_settings(), self.concurrency, torch_threads)
        self.running: dict[str, str] = {}  # job id -> owner
        self.memory: dict[str, int] = {}  # job id -> estimated bytes, while it runs
        self.admission = MemoryAdmission(get_settings())
        # Job id -> monotonic time it was asked to stop (a cancel, or its wall-clock bound):
        # still running after the cancel grace, its process group is killed.
        self.stopping: dict[str, float] = {}
        self.bounds: dict[str, tuple[float, JobBounds]] = {}  # job id -> (deadline, bounds)
        # Results whose end is not written to the store yet: their jobs stay in `running`
        # (the in-memory state follows the durable one) and are written on the next step.
        self.unrecorded: list[TaskResult] = []
        self.leased: set[str] = set()  # left running by a dead service: re-queued on expiry
        self.active = threading.Event()  # holds the lock and dispatches
        self._stop = threading.Event()
        self._lock_file: IO[str] | None = None
        self._last_beat = 0.0
        self._thread = threading.Thread(target=self._main, name="job-dispatcher", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop dispatching. Running jobs are left to notice (they stop and stay re-queueable)."""
        self._stop.set()
        self._thread.join(timeout)
        self.executor.shutdown(wait=False)
        if self._lock_file is not None:
            self._lock_file.close()

    def _main(self) -> None:
        while not self._stop.is_set() and not self._acquire():
            self._stop.wait(LOCK_RETRY_SECONDS)
        if self._stop.is_set():
            return
        try:
            self.recover()
            self.active.set()
            delay = TICK_SECONDS
            while not self._stop.wait(delay):
                delay = self._step_with_backoff(delay)
                self._beat()
        except Exception:  # never silently: the service keeps answering, jobs wait
            log.exception("the job dispatcher stopped")
            self.active.clear()

    def _step_with_backoff(self, delay: float) -> float:
        """One step; a transient database error waits longer each time (up to 10 s) instead
        of stopping the dispatcher. The delay before the next step."""
        try:
            self.step()
        except OperationalError as error:
            log.warning("the job store did not answer (%s); retrying", error.orig)
            return min(max(delay, TICK_SECONDS) * 2, MAX_BACKOFF_SECONDS)
        return TICK_SECONDS

    def _beat(self) -> None:
        """Say in the lock file that this process dispatches (every HEARTBEAT_SECONDS)."""
        now = time.time()
        if self._lock_file is None or now - self._last_beat < HEARTBEAT_SECONDS:
            return
        self._lock_file.seek(0)
        self._lock_file.truncate()
        self._lock_file.write(f"{os.getpid()} {now:.3f}\n")
        self._lock_file.flush()
        self._last_beat = now

    def dispatching(self) -> bool:
        """Does some process dispatch jobs from this store: this one, or (for the standby
        dispatchers of `serve --workers N`) the one whose heartbeat is in the lock file?"""
        if self.active.is_set():
            return True
        try:
            _pid, beat = self.lock_path.read_text().split()
            return time.time() - float(beat) < HEARTBEAT_STALE_SECONDS
        except (OSError, ValueError):
            return False

    def _acquire(self) -> bool:
        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        handle = self.lock_path.open("a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return False
        self._lock_file = handle
        self._beat()
        return True

    def recover(self) -> None:
        """Re-queue every job a dead service left running, once its process is gone (on a
        cluster, where its process cannot be seen from here: once its lease expired)."""
        for job in self.store.with_status("running"):
            if not self.executor.runs_here:
                self.leased.add(job.id)  # its Ray task may still run: wait for the lease
                continue
            deadline = time.monotonic() + RECOVERY_WAIT_SECONDS
            while process_alive(job.pid) and time.monotonic() < deadline:
                time.sleep(0.2)  # an orphaned job saves a checkpoint and exits by itself
            if process_alive(job.pid):
                assert job.pid is not None
                os.killpg(job.pid, signal.SIGKILL)
            self._retried(partial(self.store.requeue, job.id, REQUEUE_REASON))
        self._requeue_expired()

    def _requeue_expired(self) -> None:
        """Re-queue the recovered jobs whose lease expired; forget those that ended."""
        for job_id in sorted(self.leased):
            job = self.store.get(job_id)
            if job.status != "running":
                self.leased.discard(job_id)
            elif age_seconds(job.heartbeat_at or job.started_at) > self.service.lease_seconds:
                self._retried(partial(self.store.requeue, job_id, LEASE_REASON))
                self.leased.discard(job_id)

    def _memory_of(self, job: Any) -> int:
        """The job's memory estimate for admission. One that cannot be estimated (its inputs
        gone since it was accepted) counts as nothing: it was held to the budget when accepted,
        and it then fails with its own error instead of stopping every other job's dispatch."""
        try:
            return job_memory(job.spec, job.kind)
        except Exception:
            log.warning("no memory estimate for job %s", job.id, exc_info=True)
            return 0

    def _gpus(self, job_id: str) -> float:
        """GPUs the job's process needs: a run on `cuda` (a sweep's or study's runs reserve
        their own, as tasks of their own)."""
        job = self._retried(lambda: self.store.get(job_id))
        policy = job.spec.get("policy") if job.kind == "run" else None
        return task_gpus(policy.get("device") if isinstance(policy, dict) else None)

    def _retried(self, call: Callable[[], T]) -> T:
        """A store write, tried again with backoff (0.1 s doubling) on a transient database
        error; the last error is raised (the step is retried, its state kept)."""
        delay = STORE_BACKOFF_SECONDS
        for attempt in range(STORE_ATTEMPTS):
            try:
                return call()
            except OperationalError as error:
                if attempt == STORE_ATTEMPTS - 1 or self._stop.is_set():
                    raise
                log.warning("the job store did not answer (%s); retrying", error.orig)
                self._stop.wait(delay)
                delay *= 2
        raise AssertionError("unreachable")

    def step(self) -> None:
        """One round: collect finished jobs, enforce cancels, start queued ones."""
        if self.leased:
            self._requeue_expired()
        self._collect()
        self._enforce_stops()
        self._dispatch()

    def _collect(self) -> None:
        try:
            for result in self.executor.as_completed(timeout=0):
                self.unrecorded.append(result)
        except TimeoutError:
            pass
        while self.unrecorded:  # a store that stays down raises here: the rest wait
            result = self.unrecorded[0]
            self._record(result)
            self.unrecorded.pop(0)
            self.running.pop(result.key, None)  # only once its end is in the store
            self.memory.pop(result.key, None)
            self.stopping.pop(result.key, None)
            self.bounds.pop(result.key, None)

    def _record(self, result: TaskResult) -> None:
        """A job process ended; if it could not write its status (it died), write it here."""
        job = self._retried(lambda: self.store.get(result.key))
        if job.status != "running":
            return
        limit = self.max_attempts
        # "orphaned": the job saw its parent (the Ray node's raylet) die and stopped itself,
        # leaving its status for us: like a worker that died, it runs again from its checkpoint.
        lost = result.lost or (result.ok and result.value == ORPHANED)
        died = result.error or "its parent process died, e.g. its Ray node"
        bounded = self.bounds.get(job.id)
        bound_reason = bounded[1].reason(result.signal) if bounded else None
        if job.cancel_requested:
            self._retried(lambda: self.store.finish(job.id, "cancelled"))
        elif bound_reason is not None:  # a bound the kernel enforced ended it: never re-run
            self._retried(lambda: self.store.finish(job.id, "failed", error=bound_reason))
        elif lost and job.attempts < limit:  # run it again, from its last checkpoint
            reason = LOST_REASON.format(error=died)
            self._retried(partial(self.store.requeue, job.id, reason))
        else:
            reason = result.error or "the job process ended without reporting a status"
            if lost:  # a job that kills its worker every time is not run forever
                reason = GIVEN_UP.format(attempts=job.attempts, error=died, limit=limit)
            self._retried(lambda: self.store.finish(job.id, "failed", error=reason))

    def _enforce_stops(self) -> None:
        """A job past its wall-clock bound ends failed with the reason (its watcher sees it and
        stops the job); a cancelled one is asked to stop by its watcher. Either, still running
        after the cancel grace, is killed with its process group, whatever it is doing."""
        if not self.running:
            return
        now = time.monotonic()
        for job_id, (deadline, bounds) in list(self.bounds.items()):
            if job_id in self.running and job_id not in self.stopping and now > deadline:
                reason = bounds.wall_reason()
                log.warning("job %s: %s", job_id, reason)
                self._retried(partial(self.store.finish, job_id, "failed", error=reason))
                self.stopping[job_id] = now
        for job_id in self.store.cancels_requested():
            if job_id in self.running:
                self.stopping.setdefault(job_id, now)
        for job_id, asked in list(self.stopping.items()):
            if now - asked > self.service.cancel_grace_seconds:
                self.executor.kill(job_id)

    def _dispatch(self) -> None:
        """Fill free slots taking turns between owners: each round offers the owner running
        the fewest jobs its oldest queued one; no owner past its per-key cap, and no job whose
        memory does not fit beside the running ones (machine-wide admission)."""
        free = self.concurrency - len(self.running)
        cap = self.service.running_per_key()
        counts = Counter(self.running.values())
        while free > 0:
            full = [owner for owner, n in counts.items() if n >= cap]
            candidates = self.store.oldest_queued_per_owner(full)
            if not candidates:
                return
            # Fewest running first; among equals, the oldest submission (the list's order).
            job_id, owner = min(candidates, key=lambda candidate: counts[candidate[1]])
            job = self._retried(partial(self.store.get, job_id))
            needed = self._memory_of(job)
            if not self.admission.fits(self.memory.values(), needed):
                return  # it starts when running jobs have freed enough memory
            if not self._retried(partial(self.store.mark_running, job_id)):
                continue  # cancelled meanwhile: the next round offers that owner's next job
            self.running[job_id] = owner
            self.memory[job_id] = needed
            counts[owner] += 1
            bounds = job_bounds(self.service, job.total_timesteps)
            self.bounds[job_id] = (time.monotonic() + bounds.wall_seconds, bounds)
            task = Task(
                job_id,
                run_job,
                (job_id, self.store.url, self.service.job_nice, bounds),
                num_gpus=self._gpus(job_id),
            )
            self.executor.submit(task)
            free -= 1
