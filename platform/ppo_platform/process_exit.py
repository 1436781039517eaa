"""Ending a command's process without the interpreter's teardown, once all it did is durable.

With torch and stable-baselines3 loaded, Python's own shutdown (freeing every module, the
garbage collector over all objects) takes 0.5-1.5 s that a user waits for and that changes
nothing on disk. `exit_now` runs the exit handlers (this process's tracking process is closed
there and waited for), flushes the standard streams, then ends the process with `os._exit`.
It only does so when no other non-daemon thread runs (their work would be cut short);
otherwise it returns and the caller exits the ordinary way.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading

from ppo_platform import tracing


def only_main_thread_left() -> bool:
    return all(
        thread.daemon or thread is threading.main_thread() for thread in threading.enumerate()
    )


def exit_now(code: int) -> None:
    """Exit with `code` right after the exit handlers, if that is safe (else return)."""
    if not only_main_thread_left():
        return
    atexit._run_exitfuncs()  # CPython's own call at shutdown; there is no public one
    for stream in (sys.stdout, sys.stderr):
        # Closed or replaced by a stream without flush: nothing buffered to lose.
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    tracing.mark("process_exit: os._exit")
    os._exit(code)
