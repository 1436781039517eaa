"""Specs are read and validated in worker processes, off the API process's event loop.

Parsing YAML, validating the spec, creating its env once and writing the row cost a submission
about 1.5 ms of CPU, and a large or awkward spec much more; in the API process that time holds
the GIL that status reads need. An `IntakePool` runs `submit_spec` (and the validate route's
check) in `workers` spawned processes instead, each with its own connection to the job store,
so a slow submission delays no other request. Workers start with the API and import the spec
machinery in the background; with `workers=0` the work runs in threads of the calling process.

Why not on the Executor seam (`execution/`), with its one task body (`execution/body.py`): that
seam carries errors as text (`TaskResult.error`), so a task's exception never has to unpickle,
and its signal rules let a task close its runs on Ctrl-C. Here the caller needs the exception
itself: a `SpecError` or `LimitError` raised in a worker must reach the route as that type, with
its issues, to become the right 4xx answer; so errors cross back pickled, checked by
`crosses_back` first. An intake request also trains nothing and closes no run: a worker that dies
or is interrupted costs one request (answered 503, `RESTARTED`), never a run, so the pool is
replaced rather than drained. What both share is the `spawn` start and one process per worker.
"""

from __future__ import annotations

import os
import pickle
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from ppo_platform.errors import LimitError, PlatformError
from ppo_platform.jobs import intake
from ppo_platform.jobs.intake_workers import WorkerProcesses
from ppo_platform.jobs.models import Experiment
from ppo_platform.jobs.store import JobStore

Result = TypeVar("Result")
RESTARTED = "the process reading specs stopped and was restarted; send the request again."


def _worker_setup(parent: int) -> None:
    """Worker initializer: exit with the API process, and leave WAL checkpoints to the idle
    moments (`checkpoint_when_idle`, which only a worker process runs)."""
    global _checkpoints_when_idle
    _checkpoints_when_idle = True
    _exit_with_parent(parent)


def _exit_with_parent(parent: int) -> None:
    """A worker whose API process is gone (even SIGKILLed) exits too, so no orphan waits for
    work forever."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def warm_up() -> int:
    """Import what a submission needs and create the example env once (its registry too)."""
    grid = "name: warm-up\nenv: {id: ppo_platform/GridWorld-v0, n_envs: 1}\n"
    intake.prepare_submission(grid, 10**9, "warm-up")
    return 0


def crosses_back(error: BaseException) -> BaseException:
    """`error` if this process's pickle of it rebuilds in another, else a PlatformError with
    its text: an error that cannot be rebuilt would break the pool for every queued request."""
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:
        return PlatformError(f"{type(error).__name__}: {error}")
    return error


def guarded(fn: Callable[..., Result], *args: Any) -> Result:
    """`fn(*args)` in a worker, its error sent back only in a form the caller can rebuild."""
    try:
        return fn(*args)
    except Exception as error:
        raise crosses_back(error) from None


_stores: dict[str, JobStore] = {}
_written: dict[str, int] = {}  # store URL -> submissions since its last checkpoint
_checkpoints_when_idle = False  # a worker process (threads of the API process never idle)
# About 1,000 WAL pages (10 a submission), where SQLite's commits checkpoint by themselves: a
# worker idle between two submissions (one client) must not checkpoint after every one.
IDLE_CHECKPOINT_SUBMISSIONS = 100
_stores_lock = threading.Lock()


def submit_spec(
    database_url: str,
    owner: str,
    text: str,
    idempotency_key: str | None,
    max_env_steps: int,
    max_queued: int,
) -> tuple[Experiment, bool]:
    """Validate `text` in full and queue it for `owner`: (experiment, created)."""
    job = intake.prepare_submission(text, max_env_steps)
    return queue_submission(database_url, owner, job, idempotency_key, max_queued)


def queue_submission(
    database_url: str,
    owner: str,
    job: intake.Submission,
    idempotency_key: str | None,
    max_queued: int,
) -> tuple[Experiment, bool]:
    """Queue a validated `job` for `owner` in this worker's store: (experiment, created)."""
    with _stores_lock:  # one engine per worker process (and per store URL)
        store = _stores.get(database_url)
        if store is None:
            store = JobStore(
                database_url,
                Path("."),
                migrate_schema=False,
                deferred_checkpoints=_checkpoints_when_idle,
            )
            _stores[database_url] = store
        _written[database_url] = _written.get(database_url, 0) + 1
    return store.submit(owner, job, idempotency_key, max_queued)


def checkpoint_when_idle() -> None:
    """A worker with no call waiting: the WAL checkpoint its submissions left (database.py),
    once they are IDLE_CHECKPOINT_SUBMISSIONS."""
    with _stores_lock:
        due = [url for url, count in _written.items() if count >= IDLE_CHECKPOINT_SUBMISSIONS]
        for url in due:
            del _written[url]
    for url in due:
        _stores[url].checkpoint()


def validation_summary(text: str) -> dict[str, Any]:
    """The validate route's answer: kind, name, hash and resolved spec (SpecError if not).
    A language-model spec is validated as the jobs API takes it (paths inside the LM folder)."""
    if intake.is_lm_text(text, "request"):
        lm = intake.prepare_lm_submission(text, sys.maxsize, "request")
        return {"kind": lm.kind, "name": lm.name, "spec_hash": lm.spec_hash, "spec": lm.spec}
    spec = intake.parse_spec(text)
    intake.total_env_steps(spec, "request")
    return {
        "kind": intake.kind_of(spec),
        "name": spec.name,
        "spec_hash": spec.spec_hash(),
        "spec": spec.resolved(),
    }


class IntakePool:
    """`workers` processes (0: threads of this process) that read submitted specs; at most
    `queue_limit` requests wait or run in them at once (429 past it, never an unbounded queue)."""

    def __init__(self, workers: int, store: JobStore | None = None, queue_limit: int = 64) -> None:
        self.workers, self.queue_limit = workers, queue_limit
        self._pending = 0
        self._lock = threading.Lock()
        self._threads = ThreadPoolExecutor(4, thread_name_prefix="intake") if not workers else None
        self._processes = (
            WorkerProcesses(
                workers,
                guarded,
                RESTARTED,
                (_worker_setup, (os.getpid(),)),
                (checkpoint_when_idle, ()),
            )
            if workers
            else None
        )
        if store is not None:
            self.share_store(store)

    def share_store(self, store: JobStore) -> None:
        """With threads (workers=0), submissions use `store` instead of opening their own."""
        if self.workers == 0:
            with _stores_lock:
                _stores[store.url] = store

    def start(self) -> list[Future[int]]:
        """Start the workers and warm them up; wait on the futures to know they are ready."""
        if self._processes is None:
            return []
        return self._processes.start(warm_up)

    def submit(self, fn: Callable[..., Result], *args: Any) -> Future[Result]:
        """`fn(*args)` in a worker; its exceptions (SpecError ...) come back as they are. A
        worker that died is replaced and the request answered with UnavailableError."""
        with self._lock:
            if self._pending >= self.queue_limit:
                raise LimitError(
                    f"{self._pending} specs are waiting to be read (PPO_PLATFORM_INTAKE_QUEUE);"
                    " the service is busy: retry shortly.",
                    retry_after=1,
                )
            self._pending += 1
        if self._processes is not None:
            future: Future[Result] = self._processes.call(fn, *args)
        else:
            assert self._threads is not None
            future = self._threads.submit(guarded, fn, *args)
        future.add_done_callback(self._done_one)
        return future

    def _done_one(self, _: object) -> None:
        with self._lock:
            self._pending -= 1

    def close(self) -> None:
        if self._processes is not None:
            self._processes.close()
        if self._threads is not None:
            self._threads.shutdown(wait=False, cancel_futures=True)
