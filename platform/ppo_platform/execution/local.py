"""The local process pool: the default Executor, for sweep runs and tuning workers.

Workers are forked from a fork server (`forkserver`: a fresh interpreter started once per
process, never a fork of the caller, so no MLflow or other state of the caller's is inherited)
that imported the pool's `preload` modules first: torch and SB3 are imported once, not once per
worker, and a worker is ready as soon as it is forked. Each worker takes the caller's current
environment variables and ignored signals, as a spawned one would (`fork_server.py` says why
the fork server ignores its caller's group signals, and what a worker does if it dies). Where
there is no fork server (Windows) workers are spawned. Each is pinned to `torch_threads`
compute threads (`pin_threads`). A task that raises never stops the others, and an exception
object never crosses the process boundary (many do not unpickle cleanly): it comes back as
text, so one bad task cannot break the pool. A worker that dies breaks the pool: its task and
every unfinished one come back failed.

Each task runs in `execution/body.py`'s task body, under its signal rules (the same for every
executor): an idle worker ignores Ctrl-C (it would die and break the pool); a running task
gets KeyboardInterrupt or Terminated, so it can close its runs cleanly (unless the pool's
caller was started with Ctrl-C ignored, as under `nohup`); a worker interrupted during a task
starts no further task, however that task then ended: the pool may have queued one to it
already, where cancelling cannot reach. When the caller is interrupted, queued tasks are
cancelled and running ones get `INTERRUPT_GRACE` seconds to close their runs before their
workers are terminated. `start` starts the workers ahead of the first task (warm workers).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import logging
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures import wait as wait_for
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing import forkserver
from multiprocessing.context import BaseContext
from typing import Any

from ppo_platform import tracing
from ppo_platform.execution import signals
from ppo_platform.execution.base import (
    CANCELLED,
    Executor,
    QueuedExecutor,
    Task,
    TaskResult,
    describe_error,
)
from ppo_platform.execution.body import run_body
from ppo_platform.execution.threads import THREAD_ENV_VARS, pin_threads, usable_cpus

INTERRUPT_GRACE = 30.0  # after Ctrl-C or SIGTERM, seconds running tasks get to close their runs


def default_workers() -> int:
    """One worker per core this process may use."""
    return usable_cpus()


def worker_count(requested: int | None, work: int) -> tuple[int, str | None]:
    """Workers for `work` tasks: never more than the tasks, and a warning (else None) when
    more were asked for than this machine has cores."""
    cores = default_workers()
    count = max(1, min(requested or cores, work))
    warning = None
    if count > cores:
        warning = (
            f"{count} workers on {cores} core(s): they will contend for the cores and each "
            "run slower; fewer workers usually finish sooner."
        )
    return count, warning


def _init_worker(
    torch_threads: int,
    initializer: Callable[..., None] | None,
    initargs: tuple[Any, ...],
    caller: _CallerState | None = None,
) -> None:
    """Runs once in each fresh worker, before its first task."""
    if caller is not None:  # forked from the fork server: take the caller's state as of now
        caller.apply()
    atexit.register(_exit_without_teardown)  # runs after the handlers registered from here on
    signals.note_ctrl_c_at_start()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # idle: Ctrl-C would break the pool
    pin_threads(torch_threads)
    if initializer is not None:
        initializer(*initargs)
    tracing.mark("pool worker: ready")


def _exit_without_teardown() -> None:
    """A worker's last exit handler: the pool has its results and the worker's own exit
    handlers (its tracking process closed and waited for) have run; Python's teardown of torch
    and SB3 would only keep the caller waiting in `shutdown` (seconds on a busy machine)."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    tracing.mark("pool worker: exit without teardown")
    os._exit(0)


def _ready() -> None:
    """A task that only makes the pool start a worker (`LocalExecutor.start`)."""


# The signals whose "ignored" a spawned worker would inherit from its caller.
_INHERITED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_PR_SET_PDEATHSIG = 1  # prctl(2): the signal this process gets when its parent dies


@dataclass(frozen=True)
class _CallerState:
    """What a spawned worker inherits from its caller at start and a worker forked from the
    fork server (started earlier, from an older state, ignoring group signals) must be given:
    the environment variables and which of the group signals are ignored (`nohup`)."""

    environ: dict[str, str]
    ignored: frozenset[int]

    @classmethod
    def now(cls) -> _CallerState:
        ignored = (s for s in _INHERITED_SIGNALS if signal.getsignal(s) == signal.SIG_IGN)
        return cls(dict(os.environ), frozenset(ignored))

    def apply(self) -> None:
        os.environ.clear()
        os.environ.update(self.environ)
        for signum in _INHERITED_SIGNALS:
            default = signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL
            signal.signal(signum, signal.SIG_IGN if signum in self.ignored else default)
        _die_with_the_fork_server()


def _die_with_the_fork_server() -> None:
    """If the fork server is killed, the pool counts every worker dead: make it so (SIGKILL; the
    tracking process closes a gone worker's runs KILLED, and the sweep resumes them)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


_forkserver_lock = threading.Lock()
FORK_SERVER_SETUP = "ppo_platform.execution.fork_server"  # imported first: signal dispositions


def pool_context(preload: Sequence[str], torch_threads: int) -> BaseContext:
    """The fork server's context, started now if it is not running, importing `preload` with
    `torch_threads` compute threads; `spawn` where there is no fork server. The fork server is
    one per process: a later pool reuses it (and the modules it imported then)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    with _forkserver_lock:
        context.set_forkserver_preload([FORK_SERVER_SETUP, *preload])
        saved = {name: os.environ.get(name) for name in THREAD_ENV_VARS}
        os.environ.update(dict.fromkeys(THREAD_ENV_VARS, str(torch_threads)))
        try:  # the server reads the thread variables as it imports torch
            forkserver.ensure_running()
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
    return context


class LocalExecutor(QueuedExecutor):
    """A bounded pool of spawned worker processes. Use as a context manager.

    `initializer(*initargs)` runs once in each worker; objects that may only be inherited,
    not sent with a task (a multiprocessing Lock), reach the workers this way.
    """

    def __init__(
        self,
        workers: int | None = None,
        torch_threads: int = 1,
        *,
        initializer: Callable[..., None] | None = None,
        initargs: tuple[Any, ...] = (),
        preload: Sequence[str] = (),
    ) -> None:
        if workers is not None and workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        if torch_threads < 1:
            raise ValueError(f"torch_threads must be at least 1, got {torch_threads}")
        super().__init__()
        self.workers = workers or default_workers()
        context = pool_context(preload, torch_threads)
        caller = _CallerState.now() if context.get_start_method() == "forkserver" else None
        self._pool = ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=context,
            initializer=_init_worker,
            initargs=(torch_threads, initializer, initargs, caller),
        )
        self._running: dict[str, Future[TaskResult]] = {}  # submitted, not finished

    def start(self) -> None:
        """Start every worker now, so their start-up (imports, the initializer) overlaps the
        caller's own set-up instead of following it; they are kept for every task after."""
        for _ in range(self.workers):  # the pool spawns a worker per submit while none is idle
            self._pool.submit(_ready)

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if isinstance(exc, KeyboardInterrupt):  # Ctrl-C or SIGTERM: let running tasks close
            self.shutdown(cancel_pending=True, grace=INTERRUPT_GRACE)
        else:
            super().__exit__(exc_type, exc, tb)

    def submit(self, task: Task) -> None:
        with self._lock:
            self._claim(task.key)
        # Not under self._lock: the pool calls _relay while holding its own lock.
        try:
            future = self._pool.submit(run_body, task.key, task.fn, task.args, task.kwargs)
        except BrokenProcessPool as error:  # a worker died earlier: this task fails too
            self._done.put(TaskResult(task.key, error=describe_error(error)))
            return
        except BaseException:  # shut down already: the task was never accepted
            with self._lock:
                self._outstanding.discard(task.key)
            raise
        with self._lock:
            self._running[task.key] = future
        future.add_done_callback(functools.partial(self._relay, task.key))

    def _relay(self, key: str, future: Future[TaskResult]) -> None:
        """Turn a finished pool future into exactly one TaskResult on the done queue."""
        with self._lock:
            self._running.pop(key, None)
        if future.cancelled():
            result = TaskResult(key, error=CANCELLED, cancelled=True)
        elif (error := future.exception()) is not None:
            # The pool itself failed: a worker died, or the task could not be pickled.
            result = TaskResult(key, error=describe_error(error))
        else:
            result = future.result()
        self._done.put(result)

    def cancel(self, key: str) -> bool:
        with self._lock:
            future = self._running.get(key)
        # Outside the lock: a successful cancel runs _relay in this thread.
        return future is not None and future.cancel()

    def shutdown(
        self, wait: bool = True, *, cancel_pending: bool = False, grace: float | None = None
    ) -> None:
        if wait and grace is not None:
            tracing.mark("pool: interrupted, waiting for running tasks")
            workers = self._worker_processes()  # the pool forgets them once shut down
            self._pool.shutdown(wait=False, cancel_futures=cancel_pending)
            with self._lock:
                running = list(self._running.values())
            if wait_for(running, timeout=grace).not_done:
                tracing.mark("pool: grace over, terminating workers")
                for process in workers:  # the pool sees them die and fails their tasks
                    process.terminate()
            tracing.mark("pool: running tasks done")
        self._pool.shutdown(wait=wait, cancel_futures=cancel_pending)
        tracing.mark("pool: shut down")

    def _worker_processes(self) -> list[Any]:
        # ProcessPoolExecutor.terminate_workers() arrives in Python 3.14; until then, the
        # pool's own process table.
        return list((getattr(self._pool, "_processes", None) or {}).values())


def run_tasks(
    tasks: Iterable[Task],
    workers: int | None = None,
    *,
    torch_threads: int = 1,
    on_done: Callable[[TaskResult], None] | None = None,
    executor: Executor | None = None,
    max_attempts: int = 1,
    again: Callable[[Task, TaskResult], Task] | None = None,
) -> list[TaskResult]:
    """Run every task on a fresh pool (or on `executor`, shut down at the end); results in
    task order. `on_done` sees each as it ends. A task whose worker died (`lost`) runs again,
    as `again(task, result)` says (e.g. resume from a checkpoint), up to `max_attempts` runs."""
    tasks = list(tasks)
    if not tasks:
        return []
    if len({task.key for task in tasks}) != len(tasks):
        raise ValueError("task keys must be unique: results are matched to tasks by key")
    by_key: dict[str, TaskResult] = {}
    current = {task.key: task for task in tasks}
    attempts = dict.fromkeys(current, 1)
    if executor is None:
        executor = LocalExecutor(min(workers or default_workers(), len(tasks)), torch_threads)
    with executor:
        for result in executor.map_tasks(tasks):
            if result.lost and attempts[result.key] < max_attempts:
                attempts[result.key] += 1
                task = current[result.key]
                current[result.key] = again(task, result) if again else task
                executor.submit(current[result.key])  # collected by the same loop
                continue
            by_key[result.key] = result
            if on_done is not None:
                on_done(result)
    return [by_key[task.key] for task in tasks]
