"""A cancel that reaches a running Ray task, so it stops as a local worker does on Ctrl-C.

Ray's own `ray.cancel` cannot interrupt a running task here: Ray workers ignore SIGINT, and a
forced cancel kills the worker process (its MLflow run stays RUNNING, no last checkpoint). So
the executor raises a flag in the cluster's key-value store (Ray's GCS, reachable from every
node) and a thread in the task polls it: on the flag it raises KeyboardInterrupt in the task's
main thread, where the runner saves a checkpoint and closes its run KILLED, and a tuning worker
ends its trial, exactly as under Ctrl-C locally.

Imported only inside Ray tasks and by the Ray executor (never on the core paths).
"""

from __future__ import annotations

import logging
import signal
import threading
from typing import Any

from ppo_platform.execution.signals import raise_interrupt

NAMESPACE = "ppo_platform_cancel"
POLL_SECONDS = 0.5

log = logging.getLogger(__name__)


def _kv() -> Any:
    # Ray's key-value store in its GCS (Ray's own libraries keep their state there); ray is
    # pinned (the `ray` extra), so this internal module is the one the tests ran against.
    from ray.experimental import internal_kv

    return internal_kv


def flag_name(executor_id: str, key: str) -> str:
    return f"{executor_id}/{key}"


def raise_flag(name: str) -> None:
    _kv()._internal_kv_put(name, b"1", namespace=NAMESPACE)


def drop_flags(executor_id: str) -> None:
    """Forget every flag of one executor (at its shutdown)."""
    _kv()._internal_kv_del(f"{executor_id}/", del_by_prefix=True, namespace=NAMESPACE)


def flag_raised(name: str) -> bool:
    try:
        return bool(_kv()._internal_kv_get(name, namespace=NAMESPACE))
    except Exception:  # the GCS is busy or gone: look again next time
        return False


class CancelWatch:
    """Inside a task: SIGINT raises KeyboardInterrupt (Ray workers ignore it) and SIGTERM
    raises Terminated while the task runs; a thread turns the raised flag into a SIGINT to
    this process's main thread. Handlers are restored when the task ends (workers are reused).

    One cancel arrives twice: the executor raises the flag and calls `ray.cancel`, whose
    `kill_main_task` interrupts the main thread too (`_thread.interrupt_main`, i.e. this
    SIGINT handler). Only the first SIGINT raises: a second one raised while the task closes
    its run (the checkpoint, the tracking process's answer) would cut the close short and
    leave the run RUNNING in a worker that lives on. Later ones are counted, not raised.
    """

    def __init__(self, name: str | None) -> None:
        self.name = name
        self.fired = False
        self._stop = threading.Event()
        self._saved: list[tuple[int, Any]] = []
        self._mask: set[int | signal.Signals] | None = None
        self._main = threading.main_thread().ident
        self.interrupted = threading.Event()  # the first SIGINT of this task was raised
        self.held = 0  # SIGINTs after the first, not raised
        self._thread = threading.Thread(target=self._loop, name="ray-cancel", daemon=True)

    def __enter__(self) -> CancelWatch:
        if threading.current_thread() is threading.main_thread():
            handlers = {signal.SIGINT: self._interrupt_once, signal.SIGTERM: raise_interrupt}
            for signum, handler in handlers.items():
                self._saved.append((signum, signal.getsignal(signum)))
                signal.signal(signum, handler)
            # Ray's worker also blocks SIGINT in its main thread.
            self._mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
        if self.name is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, self._mask)
        for signum, handler in self._saved:
            signal.signal(signum, handler)

    def _interrupt_once(self, signum: int, frame: Any) -> None:
        if self.interrupted.is_set():
            self.held += 1
            log.info("a further interrupt of a task already stopping: held (%d)", self.held)
            return
        self.interrupted.set()
        raise_interrupt(signum, frame)

    def _loop(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            if self.name is not None and flag_raised(self.name):
                self.fired = True
                stopping = self.interrupted.is_set()  # Ray's own cancel came first
                if not (stopping or self._stop.is_set()) and self._main is not None:
                    signal.pthread_kill(self._main, signal.SIGINT)  # wakes a sleep, too
                return
