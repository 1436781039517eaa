"""The Executor seam: submit tasks, collect their results as they finish, cancel, shut down.

Errors are data: a task that raises, cannot be pickled, or whose worker dies comes back as a
`TaskResult` with `error` set; collecting results never raises because of a task. The local
process pool is the default implementation; others (a Ray cluster) plug in beside it.
"""

from __future__ import annotations

import queue
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

CANCELLED = "Cancelled: the task was cancelled before it started"


@dataclass(frozen=True)
class Task:
    """One job: `fn(*args, **kwargs)` in a worker process; `key` names it in results.

    `num_gpus`: GPUs the task needs (a run with `policy.device: cuda`); a cluster executor
    reserves them, a local one has the machine's.
    """

    key: str
    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    num_gpus: float = 0.0


@dataclass(frozen=True)
class TaskResult:
    """How one job ended: `value` if it returned, `error` (type: message) if it did not."""

    key: str
    value: Any = None
    error: str | None = None
    traceback: str | None = None
    pid: int | None = None
    started: float | None = None  # wall-clock (time.time()) in the worker
    ended: float | None = None
    cancelled: bool = False  # never started: cancelled, or dropped at shutdown
    lost: bool = False  # its worker process or node died under it: it may be run again
    signal: int | None = None  # the signal that killed its process, where one did

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def seconds(self) -> float | None:
        if self.started is None or self.ended is None:
            return None
        return self.ended - self.started


def describe_error(error: BaseException) -> str:
    """`Type: message`, the way an error is carried in a TaskResult (an env's own exception
    as its own type and message: docs/guides/your-own-environment.md)."""
    from ppo_platform.errors import EnvCrashError

    if isinstance(error, EnvCrashError):
        return error.reason()
    message = str(error).strip()
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


class Executor(ABC):
    """Runs tasks somewhere else. Every submitted task yields exactly one TaskResult."""

    # False when tasks may run on other machines: their process ids mean nothing here.
    runs_here: bool = True

    @abstractmethod
    def submit(self, task: Task) -> None:
        """Queue `task`. Its key must differ from every task whose result is not collected yet."""

    @abstractmethod
    def as_completed(self, timeout: float | None = None) -> Iterator[TaskResult]:
        """Yield results as tasks finish, until none is outstanding (tasks submitted meanwhile
        included). Raises TimeoutError if `timeout` seconds pass without all of them."""

    @abstractmethod
    def cancel(self, key: str) -> bool:
        """Cancel a task that has not started: it never runs and comes back `cancelled`.
        Returns False if it already started (it is not interrupted) or is unknown."""

    def start(self) -> None:
        """Start the workers ahead of the first task, if this executor keeps workers here."""
        return None

    def health(self) -> str | None:
        """Why this executor cannot hand out results right now; None when it can."""
        return None

    def kill(self, key: str) -> bool:
        """Stop a running task forcibly; False if it is not running or this executor cannot."""
        return False

    @abstractmethod
    def shutdown(
        self, wait: bool = True, *, cancel_pending: bool = False, grace: float | None = None
    ) -> None:
        """Stop accepting tasks and release the workers. `cancel_pending` drops queued tasks;
        with `grace`, tasks still running after that many seconds are stopped forcibly."""

    def map_tasks(self, tasks: Iterable[Task]) -> Iterator[TaskResult]:
        """Submit `tasks` and yield every outstanding result in completion order."""
        for task in tasks:
            self.submit(task)
        yield from self.as_completed()

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        # On an error or Ctrl-C, queued tasks are dropped; running ones finish or stop themselves.
        self.shutdown(cancel_pending=exc_type is not None)


class QueuedExecutor(Executor):
    """An Executor whose finished tasks land on one queue, in the order they end.

    Subclasses put exactly one TaskResult per claimed key on `_done`; `as_completed` hands
    them out. `_lock` guards `_outstanding` and whatever state the subclass adds.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._outstanding: set[str] = set()  # submitted, result not collected yet
        self._done: queue.SimpleQueue[TaskResult] = queue.SimpleQueue()

    def _claim(self, key: str) -> None:
        """Count `key` as outstanding; the caller holds `_lock`."""
        if key in self._outstanding:
            raise ValueError(f"a task with key {key!r} is already outstanding")
        self._outstanding.add(key)

    def as_completed(self, timeout: float | None = None) -> Iterator[TaskResult]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._outstanding:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                result = self._done.get(timeout=left)
            except queue.Empty:
                raise TimeoutError(f"{len(self._outstanding)} task(s) still running") from None
            with self._lock:
                self._outstanding.discard(result.key)
            yield result
