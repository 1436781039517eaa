"""SIGTERM handled like Ctrl-C: raised as `Terminated` (a KeyboardInterrupt) in the main thread,
so a checkpoint is saved and the run marked KILLED, as for Ctrl-C."""

from __future__ import annotations

import signal
import threading
from types import FrameType

from ppo_platform.errors import Terminated


def raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated(f"terminated by signal {signum}")


def terminate_as_interrupt() -> None:
    """Install the SIGTERM handler (only the main thread may; elsewhere this does nothing)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, raise_terminated)
