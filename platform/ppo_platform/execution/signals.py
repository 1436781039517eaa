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
