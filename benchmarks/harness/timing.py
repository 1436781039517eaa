"""Timing: one whole process as a user pays for it, or one call in this process."""

from __future__ import annotations

import os
import resource
import shlex
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[2]


class ProcessFailed(RuntimeError):
    """A timed process exited non-zero; the message holds its command and stderr's tail, and
    `sample` what was measured (wall, CPU, its output)."""

    def __init__(self, message: str, sample: dict[str, Any]) -> None:
        super().__init__(message)
        self.sample = sample


def run_process(
    command: Sequence[str],
    env: Mapping[str, str] | None = None,
    cwd: Path | str = ROOT,
    keep_stdout: bool = False,
    keep_stderr: bool = False,
) -> dict[str, Any]:
    """One whole process: wall, CPU (user + sys of it and the children it waited for) and peak
    RSS of its largest process in MiB, from `os.wait4` (what `/usr/bin/time -v` prints).

    Raises ProcessFailed on a non-zero exit. With `keep_stdout` its stdout (text) is returned
    too; with `keep_stderr` its stderr, for the time marks it printed, with its `pid` and
    `started_at` (`time.perf_counter()` at launch, the clock the marks use).
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(
            list(command),
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdout=out if keep_stdout else subprocess.DEVNULL,
            stderr=err,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = (f.read().decode(errors="replace") for f in (out, err))
    sample: dict[str, Any] = {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mib": usage.ru_maxrss / 1024,
    }
    if keep_stdout:
        sample["stdout"] = stdout
    if keep_stderr:  # its pid, and its launch on the perf_counter clock its marks use
        sample.update(stderr=stderr, started_at=started, pid=proc.pid)
    returncode = os.waitstatus_to_exitcode(status)
    if returncode != 0:
        message = f"{shlex.join(command)} exited {returncode}:\n{stderr[-3000:]}"
        raise ProcessFailed(message, {**sample, "stdout": stdout, "stderr": stderr})
    return sample


class Launched:
    """One whole process started now, its output to `log`; `wait()` -> its wall and CPU as
    `run_process` measures them. For processes that run side by side."""

    def __init__(self, command: Sequence[str], env: Mapping[str, str], log: Path) -> None:
        self.command, self.log = list(command), log
        self.started = time.perf_counter()
        with log.open("w") as out:
            self.process = subprocess.Popen(self.command, env=dict(env), stdout=out, stderr=out)

    def wait(self) -> dict[str, Any]:
        """Raises ProcessFailed (the log's tail in its message) on a non-zero exit."""
        _, status, usage = os.wait4(self.process.pid, 0)
        sample = {
            "wall_s": time.perf_counter() - self.started,
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_rss_mib": usage.ru_maxrss / 1024,
        }
        returncode = os.waitstatus_to_exitcode(status)
        if returncode != 0:
            tail = self.log.read_text()[-4000:]
            raise ProcessFailed(f"{shlex.join(self.command)} exited {returncode}:\n{tail}", sample)
        return sample


def children_cpu_s() -> float:
    """User + sys CPU seconds of every child process this one has waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def peak_rss_mib() -> float:
    """This process's peak resident memory so far, in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def process_cpu_s(pid: int) -> float:
    """User + sys CPU seconds a live process has used so far (its own, not its children's), from
    /proc; 0 once it has ended."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def descendants(pid: int) -> list[int]:
    """The live children of `pid`, their children, and so on, from /proc."""
    found: list[int] = []
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            listed = children.read_text().split()
        except OSError:  # the thread ended meanwhile
            continue
        for child in listed:
            found += [int(child), *descendants(int(child))]
    return found


def live_children_cpu_s() -> float:
    """User + sys CPU seconds used so far by this process's live descendants (not yet waited
    for, e.g. a tracking process), from /proc."""
    return sum(process_cpu_s(pid) for pid in descendants(os.getpid()))


def measured(call: Callable[[], T], clock: str = "process") -> tuple[T, dict[str, float]]:
    """What `call()` returned, and its wall seconds and CPU seconds (`process`: this process's
    user + sys, every thread; `thread`: the calling thread's only)."""
    cpu = time.process_time if clock == "process" else time.thread_time
    wall_started, cpu_started = time.perf_counter(), cpu()
    returned = call()
    return returned, {"wall_s": time.perf_counter() - wall_started, "cpu_s": cpu() - cpu_started}


def timed(call: Callable[[], object], clock: str = "process") -> dict[str, float]:
    """`measured` without what the call returned."""
    return measured(call, clock)[1]
