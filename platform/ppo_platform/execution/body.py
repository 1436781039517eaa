"""The one task body every executor runs in its worker, and the one set of signal rules.

`LocalExecutor` (pooled workers), `IsolatedExecutor` (a fresh process per task) and
`RayExecutor` (Ray workers) all call `run_body` in the process that runs the task. The rules:

- While a task runs, SIGTERM raises `Terminated` and SIGINT raises `KeyboardInterrupt` in the
  worker's main thread (`signals.raise_interrupt`), so the task saves a checkpoint and closes
  its run KILLED. A SIGINT the worker inherited as ignored (`nohup`) stays ignored.
- When the task ends, the handlers it found are put back (an idle pooled worker ignores Ctrl-C).
- Whatever the task raises, an interrupt too, comes back as data: a `TaskResult` with the error
  as text and its traceback. No exception object crosses the process boundary (many do not
  unpickle cleanly).
- A worker interrupted during a task starts no further task: one queued to it meanwhile comes
  back cancelled, never started.

What differs stays with each executor: its own process group (a fresh process per task), the
Ray worker's cancel flag and signal mask (`ray_cancel.CancelWatch`), pinned threads at start.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any

from ppo_platform.execution import signals
from ppo_platform.execution.base import CANCELLED, TaskResult, describe_error

_interrupted = False  # in this process: a task ended by an interrupt


@contextlib.contextmanager
def interrupt_rules() -> Iterator[None]:
    """While the block runs: SIGTERM and SIGINT (unless ignored on arrival) raise an interrupt;
    after it, the handlers found are back. Only the main thread can take signals."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    if saved[signal.SIGINT] is not signal.SIG_IGN or not signals.ctrl_c_ignored_at_start():
        signal.signal(signal.SIGINT, signals.raise_interrupt)
    signal.signal(signal.SIGTERM, signals.raise_interrupt)
    try:
        yield
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)


def forget_interrupt() -> None:
    """The interrupt that ended the last task was a cancel of that task alone (a Ray cancel
    flag): this reused worker may run the next one."""
    global _interrupted
    _interrupted = False


def run_body(
    key: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> TaskResult:
    """Run one task under the rules above; its value or its error as a TaskResult."""
    global _interrupted
    if _interrupted or signals.received():  # queued to it before the interrupt: never started
        return TaskResult(key, error=CANCELLED, cancelled=True, pid=os.getpid())
    started = time.time()
    try:
        with interrupt_rules():
            value = fn(*args, **kwargs)
    except BaseException as error:  # KeyboardInterrupt and SystemExit too: reported as data
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            _interrupted = True
        return TaskResult(
            key,
            error=describe_error(error),
            traceback=traceback.format_exc(),
            pid=os.getpid(),
            started=started,
            ended=time.time(),
        )
    return TaskResult(key, value=value, pid=os.getpid(), started=started, ended=time.time())
