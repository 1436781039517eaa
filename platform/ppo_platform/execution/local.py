"""A local process pool for independent jobs (sweep runs, tuning trials).

Generic on purpose: submit a picklable function and its arguments, get a `TaskResult` back
holding either the value or the error as text. A job that raises never stops the others, and
an exception object never crosses the process boundary (many do not unpickle cleanly), so one
bad job cannot break the pool.

Workers are started with the `spawn` context (no forked torch/MLflow state, same behaviour on
every OS) and limited to `torch_threads` torch threads each: with small nets, one thread per
worker is fastest and N workers on N cores do not fight over them.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

THREAD_ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


@dataclass(frozen=True)
class Task:
    """One job: `fn(*args, **kwargs)` in a worker process; `key` names it in results."""

    key: str
    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TaskResult:
    """How one job ended: `value` if it returned, `error` (type: message) if it raised."""

    key: str
    value: Any = None
    error: str | None = None
    traceback: str | None = None
    pid: int | None = None
    started: float | None = None  # wall-clock (time.time()) in the worker
    ended: float | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def seconds(self) -> float | None:
        if self.started is None or self.ended is None:
            return None
        return self.ended - self.started


def default_workers() -> int:
    """One worker per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _init_worker(torch_threads: int) -> None:
    """Runs once in each fresh worker: torch reads these variables when it is first imported.

    torch is not imported here, so jobs that do not need it start fast.
    """
    for name in THREAD_ENV_VARS:
        os.environ[name] = str(torch_threads)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(torch_threads)


def _call(
    key: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> TaskResult:
    """Run one job in the worker; turn any exception into text (exceptions may not unpickle)."""
    started = time.time()
    try:
        value = fn(*args, **kwargs)
    except BaseException as error:  # KeyboardInterrupt too: record, re-raise
        result = TaskResult(
            key,
            error=_describe(error),
            traceback=traceback.format_exc(),
            pid=os.getpid(),
            started=started,
            ended=time.time(),
        )
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            raise
        return result
    return TaskResult(key, value=value, pid=os.getpid(), started=started, ended=time.time())


def _describe(error: BaseException) -> str:
    message = str(error).strip()
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


class LocalExecutor:
    """A bounded pool of spawned worker processes. Use as a context manager."""

    def __init__(self, workers: int | None = None, torch_threads: int = 1) -> None:
        if workers is not None and workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        if torch_threads < 1:
            raise ValueError(f"torch_threads must be at least 1, got {torch_threads}")
        self.workers = workers or default_workers()
        self._pool = ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker,
            initargs=(torch_threads,),
        )

    def submit(
        self, key: str, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
    ) -> Future[TaskResult]:
        """Queue `fn(*args, **kwargs)`; the future always resolves to a TaskResult, never raises."""
        outer: Future[TaskResult] = Future()
        inner = self._pool.submit(_call, key, fn, args, kwargs)

        def relay(done: Future[TaskResult]) -> None:
            if done.cancelled():
                outer.cancel()
                return
            error = done.exception()
            if error is None:
                outer.set_result(done.result())
            else:  # the pool itself failed: a worker died, or the job could not be pickled
                outer.set_result(TaskResult(key, error=_describe(error)))

        inner.add_done_callback(relay)
        return outer

    def map_tasks(self, tasks: Iterable[Task]) -> Iterator[TaskResult]:
        """Run `tasks`, yielding each result as it finishes (completion order)."""
        futures = [self.submit(task.key, task.fn, *task.args, **task.kwargs) for task in tasks]
        for future in as_completed(futures):
            yield future.result()

    def shutdown(self, cancel_pending: bool = False) -> None:
        self._pool.shutdown(wait=True, cancel_futures=cancel_pending)

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        # On an error or Ctrl-C, queued jobs are dropped; running ones finish or stop themselves.
        self.shutdown(cancel_pending=exc_type is not None)


def run_tasks(
    tasks: Iterable[Task],
    workers: int | None = None,
    *,
    torch_threads: int = 1,
    on_done: Callable[[TaskResult], None] | None = None,
) -> list[TaskResult]:
    """Run every task on a fresh pool; results in task order. `on_done` sees each as it ends."""
    tasks = list(tasks)
    if not tasks:
        return []
    if len({task.key for task in tasks}) != len(tasks):
        raise ValueError("task keys must be unique: results are matched to tasks by key")
    by_key: dict[str, TaskResult] = {}
    with LocalExecutor(min(workers or default_workers(), len(tasks)), torch_threads) as executor:
        for result in executor.map_tasks(tasks):
            by_key[result.key] = result
            if on_done is not None:
                on_done(result)
    return [by_key[task.key] for task in tasks]
