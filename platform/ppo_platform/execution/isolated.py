"""One fresh process per task: the executor for long jobs that must not share a fate.

`LocalExecutor` reuses pooled workers, and a worker that dies breaks the whole pool. Here each
task gets its own `spawn`ed process in its own process group (so a signal reaches the task and
any processes it starts, and nothing else): a segfault, `os._exit` or SIGKILL fails that task
alone, as a `TaskResult` whose error names the exit code or signal.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
from collections import deque
from multiprocessing.connection import Connection
from typing import Any

from ppo_platform.execution.base import CANCELLED, QueuedExecutor, Task, TaskResult, describe_error
from ppo_platform.execution.body import run_body
from ppo_platform.execution.local import default_workers
from ppo_platform.execution.threads import pin_threads


def _child(sender: Connection, task: Task, torch_threads: int) -> None:
    """The task's process: own process group, pinned threads, then the one task body
    (`execution/body.py`: its signal rules, the result or the error as data)."""
    os.setpgid(0, 0)
    pin_threads(torch_threads)
    sender.send(run_body(task.key, task.fn, task.args, task.kwargs))
    sender.close()


def death_reason(exitcode: int | None) -> str:
    """Why a task's process ended without a result, in words."""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"ProcessDied: the task's process was killed by {name}"
    return f"ProcessDied: the task's process exited with code {exitcode} before reporting"


class IsolatedExecutor(QueuedExecutor):
    """Runs at most `workers` tasks at once, each in a new process; the rest wait in order."""

    def __init__(self, workers: int | None = None, torch_threads: int = 1) -> None:
        if workers is not None and workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        super().__init__()
        self.workers = workers or default_workers()
        self.torch_threads = torch_threads
        self._context = multiprocessing.get_context("spawn")
        self._pending: deque[Task] = deque()
        self._processes: dict[str, Any] = {}  # key -> running process
        self._closed = False

    def submit(self, task: Task) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError("the executor is shut down")
            self._claim(task.key)
            self._pending.append(task)
        self._start_pending()

    def _start_pending(self) -> None:
        with self._lock:
            while self._pending and len(self._processes) < self.workers:
                task = self._pending.popleft()
                receiver, sender = self._context.Pipe(duplex=False)
                process = self._context.Process(
                    target=_child, args=(sender, task, self.torch_threads), daemon=False
                )
                try:
                    process.start()
                except Exception as error:  # e.g. the task cannot be pickled
                    self._done.put(TaskResult(task.key, error=describe_error(error)))
                    continue
                finally:
                    sender.close()
                self._processes[task.key] = process
                threading.Thread(
                    target=self._watch, args=(task.key, process, receiver), daemon=True
                ).start()

    def _watch(self, key: str, process: Any, receiver: Connection) -> None:
        """Wait for one process: its result if it sent one, else why it died."""
        result: TaskResult | None = None
        with contextlib.suppress(EOFError, OSError):  # no result: the process died
            result = receiver.recv()
        process.join()
        receiver.close()
        if result is None:
            code = process.exitcode
            result = TaskResult(
                key,
                error=death_reason(code),
                pid=process.pid,
                signal=-code if code is not None and code < 0 else None,
            )
        with self._lock:
            self._processes.pop(key, None)
        self._done.put(result)
        self._start_pending()

    def pid(self, key: str) -> int | None:
        """The process id of a running task (None if it is not running)."""
        with self._lock:
            process = self._processes.get(key)
        return None if process is None else process.pid

    def signal(self, key: str, signum: int) -> bool:
        """Send `signum` to a running task's process group; False if it is not running."""
        pid = self.pid(key)
        if pid is None:
            return False
        try:
            os.killpg(pid, signum)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def kill(self, key: str) -> bool:
        return self.signal(key, signal.SIGKILL)

    def cancel(self, key: str) -> bool:
        with self._lock:
            for task in self._pending:
                if task.key == key:
                    self._pending.remove(task)
                    self._done.put(TaskResult(key, error=CANCELLED, cancelled=True))
                    return True
        return False

    def shutdown(
        self, wait: bool = True, *, cancel_pending: bool = False, grace: float | None = None
    ) -> None:
        with self._lock:
            self._closed = True
            dropped = list(self._pending) if cancel_pending else []
            for task in dropped:
                self._pending.remove(task)
                self._done.put(TaskResult(task.key, error=CANCELLED, cancelled=True))
            running = list(self._processes.values())
        if not wait:
            return
        for process in running:
            process.join(grace)
            if process.is_alive():
                os.killpg(process.pid, signal.SIGKILL)
                process.join()
