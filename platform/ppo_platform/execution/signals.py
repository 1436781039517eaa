"""Ctrl-C and SIGTERM raised in the main thread (KeyboardInterrupt, `Terminated`), so a
checkpoint is saved and the run marked KILLED; and remembered, because an exception raised from
a signal handler does not always arrive as itself.

Raised while torch writes a checkpoint, a KeyboardInterrupt comes out of `torch.save` as a
RuntimeError. Code that closes runs asks `interrupt_since(mark)` whether such an error is
really an interrupt, and treats it as one: the run is KILLED, not FAILED, and the interrupt
still ends the command (or stops a sweep worker from starting its next member).
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

from ppo_platform.errors import Terminated

_received: list[int] = []  # the signals turned into exceptions in this process, in order
_ctrl_c_ignored: bool | None = None  # a worker's SIGINT was ignored when it started (`nohup`)


def _interrupt_for(signum: int) -> KeyboardInterrupt:
    if signum == signal.SIGTERM:
        return Terminated(f"terminated by signal {signum}")
    return KeyboardInterrupt()


def raise_interrupt(signum: int, frame: FrameType | None) -> None:
    """The handler of both signals: SIGTERM raises Terminated, SIGINT KeyboardInterrupt."""
    _received.append(signum)
    raise _interrupt_for(signum)


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
