"""An interrupt is never lost: Python drops an exception raised inside a finalizer or a weakref
callback ("Exception ignored in ..."), and a signal's handler runs wherever the main thread is,
inside such a callback too. The Ray cancel flag sends its SIGINT once; lost there, a cancelled
tuning worker trained on through the study's budget. Each case runs in a fresh interpreter
(pytest replaces the unraisable-exception hook during tests)."""

from __future__ import annotations

import subprocess
import sys

import pytest

# The signal arrives while a weakref callback runs (as when the garbage collector frees an
# object that is a WeakKeyDictionary key): its handler raises there.
LOST_IN_CALLBACK = """
import signal, sys, time, weakref
from ppo_platform.execution import signals
signals.terminate_as_interrupt()
class Key:
    pass
def freed(_ref):
    signal.raise_signal(getattr(signal, sys.argv[1]))
key = Key()
watch = weakref.ref(key, freed)
try:
    del key  # the callback runs here; lost there, the interrupt would never end the wait
    time.sleep(600)
    print("not interrupted", flush=True)
except KeyboardInterrupt as error:
    print("interrupted:", type(error).__name__, flush=True)
"""

# An exception of the program's own, dropped in a callback, is still reported as before.
OTHER_ERROR = """
import weakref
from ppo_platform.execution import signals
signals.terminate_as_interrupt()
class Key:
    pass
def freed(_ref):
    raise ValueError("not an interrupt")
key = Key()
watch = weakref.ref(key, freed)
del key
print("went on", flush=True)
"""


def _run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter; a wait the interrupt never ends is a timeout here."""
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("signum", "raised"), [("SIGINT", "KeyboardInterrupt"), ("SIGTERM", "Terminated")]
)
def test_an_interrupt_raised_inside_a_weakref_callback_still_interrupts(
    signum: str, raised: str
) -> None:
    done = _run(LOST_IN_CALLBACK, signum)
    assert done.stdout.strip() == f"interrupted: {raised}", done.stdout + done.stderr
    assert "Exception ignored" not in done.stderr


def test_other_errors_dropped_in_a_callback_are_reported_as_python_does() -> None:
    done = _run(OTHER_ERROR)
    assert done.stdout.strip() == "went on"
    assert "Exception ignored" in done.stderr and "ValueError: not an interrupt" in done.stderr
