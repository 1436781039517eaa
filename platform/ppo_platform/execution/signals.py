"""Ctrl-C and SIGTERM raised in the main thread (KeyboardInterrupt, `Terminated`), so a
checkpoint is saved and the run marked KILLED; and remembered, because an exception raised from
a signal handler does not always arrive as itself.

Raised while torch writes a checkpoint, a KeyboardInterrupt comes out of `torch.save` as a
RuntimeError. Code that closes runs asks `interrupt_since(mark)` whether such an error is
really an interrupt, and treats it as one: the run is KILLED, not FAILED, and the interrupt
still ends the command (or stops a sweep worker from starting its next member).

Raised inside a weakref callback or a finalizer (the garbage collector runs them wherever the
main thread is), an exception is dropped by Python ("Exception ignored in ..."). An interrupt
dropped so is delivered again at once (`_Redeliver`), outside the callback: a signal sent once,
as a Ray task's cancel flag sends it (docs/guides/cluster.md), is never lost.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from types import FrameType, TracebackType
from typing import Any

from ppo_platform.errors import Terminated

_received: list[int] = []  # the signals turned into exceptions in this process, in order
HOOK_POLL_SECONDS = 0.01
_ctrl_c_ignored: bool | None = None  # a worker's SIGINT was ignored when it started (`nohup`)


def _interrupt_for(signum: int) -> KeyboardInterrupt:
    if signum == signal.SIGTERM:
        return Terminated(f"terminated by signal {signum}")
    return KeyboardInterrupt()


def raise_interrupt(signum: int, frame: FrameType | None) -> None:
    """The handler of both signals: SIGTERM raises Terminated, SIGINT KeyboardInterrupt."""
    _received.append(signum)
    if not isinstance(sys.unraisablehook, _Redeliver):  # set here: a test runner replaces it
        sys.unraisablehook = _Redeliver(sys.unraisablehook)
    raise _interrupt_for(signum)


class _Redeliver:
    """The unraisable-exception hook: an interrupt this module's handler raised where Python
    had to drop it is raised again in the main thread once it has left this hook (it may be
    dropped again in a further callback of the same collection, and is delivered again, until
    it arrives); anything else goes to the hook that was there before."""

    def __init__(self, previous: Any) -> None:
        self.previous = previous

    def __call__(self, unraisable: Any) -> None:
        signum = _signal_of(unraisable.exc_traceback)
        if signum is None:
            self.previous(unraisable)
            return
        # Not from here: raised in this hook, Python would drop the interrupt for good.
        threading.Thread(
            target=_deliver_after_hook, args=(signum,), name="interrupt-again", daemon=True
        ).start()


def _deliver_after_hook(signum: int) -> None:
    """The signal again, to the main thread (a real one: it also wakes a blocking wait)."""
    main = threading.main_thread().ident
    while _main_in_hook(main):
        time.sleep(HOOK_POLL_SECONDS)
    if main is not None and callable(signal.getsignal(signum)):  # still handled: not ignored
        signal.pthread_kill(main, signum)


def _main_in_hook(main: int | None) -> bool:
    frame = sys._current_frames().get(main) if main is not None else None
    while frame is not None:
        if frame.f_code is _Redeliver.__call__.__code__:
            return True
        frame = frame.f_back
    return False


def _signal_of(trace: TracebackType | None) -> int | None:
    """The signal whose interrupt `raise_interrupt` raised at the end of `trace`, if it did."""
    while trace is not None and trace.tb_next is not None:
        trace = trace.tb_next
    if trace is None or trace.tb_frame.f_code is not raise_interrupt.__code__:
        return None
    signum = trace.tb_frame.f_locals.get("signum")
    return signum if isinstance(signum, int) else None


def received() -> int:
    """A mark: how many interrupts this process has received so far."""
    return len(_received)


def forget_since(mark: int) -> None:
    """Forget the interrupts after `mark`: they were a cancel of one task (a Ray cancel flag),
    not a signal to this process."""
    del _received[mark:]


def note_ctrl_c_at_start() -> None:
    """A worker, as it starts: remember whether it inherited Ctrl-C ignored, before it ignores
    Ctrl-C while idle (`execution/body.py` keeps an inherited ignore during tasks too)."""
    global _ctrl_c_ignored
    _ctrl_c_ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN


def ctrl_c_ignored_at_start() -> bool:
    """Did this process inherit Ctrl-C ignored? (Noted by a pooled worker, else as it is now.)"""
    if _ctrl_c_ignored is not None:
        return _ctrl_c_ignored
    return bool(signal.getsignal(signal.SIGINT) == signal.SIG_IGN)


def interrupt_since(mark: int) -> KeyboardInterrupt | None:
    """The interrupt to raise again if one arrived after `mark` (the newest), else None."""
    return _interrupt_for(_received[-1]) if len(_received) > mark else None


def terminate_as_interrupt() -> None:
    """Install both handlers (only the main thread may; elsewhere this does nothing). Ctrl-C
    that the process inherited as ignored (`nohup`) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        return
    signal.signal(signal.SIGTERM, raise_interrupt)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, raise_interrupt)


class HeldCtrlC:
    """Ctrl-C held while cancelled tasks close their runs (an executor's shutdown after a
    cancel): each further SIGINT is counted in `count`, not raised, so the wait for the tasks
    is not abandoned and their runs do not stay RUNNING. A Ray task gets its cancel twice (the
    executor's flag and Ray's own `ray.cancel`), and the second must not cut the first short.
    The caller decides what a held one means (e.g. stop the tasks after a grace).

    Active only in the main thread and while SIGINT is handled here (not ignored)."""

    def __init__(self, active: bool = True) -> None:
        self.count = 0
        self._previous: Any = None
        self._active = active and threading.current_thread() is threading.main_thread()

    def __enter__(self) -> HeldCtrlC:
        if self._active and callable(signal.getsignal(signal.SIGINT)):
            self._previous = signal.signal(signal.SIGINT, self._hold)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)

    def _hold(self, signum: int, frame: FrameType | None) -> None:
        _received.append(signum)
        self.count += 1
