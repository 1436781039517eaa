"""Time marks for the fixed-cost timeline: off unless `PPO_PLATFORM_TRACE_TIMES=1`.

Every process of a run (the CLI and training process, its tracking process, an evaluation
worker) writes `trace <seconds> <pid> <process> <label>\t<cpu>` lines to its stderr,
`<seconds>` being `time.perf_counter()`: on Linux the system-wide monotonic clock, so the marks
of all processes (and of the benchmark that launched them) lie on one time line; `<cpu>` is the
CPU seconds (user + system, all threads) the process has used so far, so the CPU of a phase is
the difference between its marks even when a loaded machine stretches the wall time. Nothing
but the standard library is imported here; a mark costs one environment lookup when tracing is
off.
"""

from __future__ import annotations

import atexit
import os
import sys
import time

TRACE_ENV = "PPO_PLATFORM_TRACE_TIMES"


def enabled() -> bool:
    return os.environ.get(TRACE_ENV, "") not in ("", "0")


def mark(label: str, at: float | None = None) -> None:
    """Write one time mark (now, or `at` on the perf_counter clock) to stderr if tracing is on."""
    if not enabled():
        return
    name = os.path.basename(sys.argv[0] or "python") or "python"
    when = time.perf_counter() if at is None else at
    line = f"trace {when:.6f} {os.getpid()} {name} {label}\t{time.process_time():.3f}\n"
    stream = sys.__stderr__
    if stream is None:
        return
    try:
        stream.write(line)
        stream.flush()
    except (OSError, ValueError):  # stderr closed at interpreter exit: only the mark is lost
        pass


def process_started() -> float | None:
    """When this process started, on the perf_counter clock (10 ms resolution; Linux only)."""
    try:
        with open("/proc/self/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        ticks = int(fields[19])  # field 22 (starttime), counted after the command name
        return ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def mark_start(what: str) -> None:
    """Marks of a process's start (from /proc) and of `what` beginning now."""
    if enabled():
        started = process_started()
        if started is not None:
            mark("process started", at=started)
        mark(what)


def mark_exit_begins() -> None:
    """A mark when this process's exit handlers begin (register after the ones to time)."""
    if enabled():
        atexit.register(mark, "atexit: handlers begin")


mark_start("import ppo_platform")  # this module is the first that `ppo_platform` imports
if enabled():
    atexit.register(mark, "atexit: handlers done")  # registered first, runs last
