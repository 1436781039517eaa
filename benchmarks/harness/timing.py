"""Timing: one whole process as a user pays for it, or one call in this process."""

from __future__ import annotations

import os
import resource
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


class ProcessFailed(RuntimeError):
    """A timed process exited non-zero; the message holds its command and stderr's tail."""


def run_process(
    command: Sequence[str],
    env: Mapping[str, str] | None = None,
    cwd: Path | str = ROOT,
    stdout: int | None = subprocess.DEVNULL,
) -> dict[str, Any]:
    """One whole process: wall, CPU (user + sys of it and the children it waited for) and peak
    RSS of its largest process in MiB, from `os.wait4` (what `/usr/bin/time -v` prints).

    Raises ProcessFailed on a non-zero exit. `stderr` is returned (text) for the caller's marks.
    """
    started = time.perf_counter()
    proc = subprocess.Popen(
        list(command),
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdout=stdout,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    errors = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise ProcessFailed(
            f"{' '.join(command)} exited {proc.returncode}:\n{errors.decode()[-2000:]}"
        )
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mib": usage.ru_maxrss / 1024,
        "stderr": errors.decode(errors="replace"),
    }


def children_cpu_s() -> float:
    """User + sys CPU seconds of every child process this one has waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(call: Callable[[], object], clock: str = "process") -> dict[str, float]:
    """One call in this process: wall seconds and CPU seconds (`process`: this process's user +
    sys, every thread; `thread`: the calling thread's only)."""
    cpu = time.process_time if clock == "process" else time.thread_time
    wall_started, cpu_started = time.perf_counter(), cpu()
    call()
    return {"wall_s": time.perf_counter() - wall_started, "cpu_s": cpu() - cpu_started}
