"""The time marks a run prints with `PPO_PLATFORM_TRACE_TIMES=1` (`ppo_platform/tracing.py`):
`trace SECONDS PID PROCESS LABEL<TAB>CPU`, one `time.perf_counter()` clock for all processes."""

from __future__ import annotations

import re
from collections import defaultdict

# A mark: seconds, pid, process, label, then a tab and the CPU seconds the process had used.
TRACE = re.compile(r"^trace (\S+) (\d+) (\S+) ([^\t]*)(?:\t(\S+))?$")
TRAINING = ("learn: begins", "learn: done")

Mark = tuple[float, str, str, float]  # seconds since launch, pid, label, CPU seconds


def parse_marks(stderr: str, started_at: float = 0.0) -> list[Mark]:
    """Every mark in a process tree's stderr, its time relative to `started_at`."""
    return [
        (float(m[1]) - started_at, m[2], m[4], float(m[5] or 0.0))
        for line in stderr.splitlines()
        if (m := TRACE.match(line))
    ]


def roles(marks: list[Mark]) -> dict[str, str]:
    """pid -> what the process is, from its marks: the CLI (first), workers, tracking."""
    kinds: dict[str, str] = {}
    for _, pid, label, _ in marks:
        if pid not in kinds:
            kinds[pid] = "cli" if not kinds else "other"
        if label.startswith("tracking:") and kinds[pid] == "other":
            kinds[pid] = "tracking"
        elif label.startswith("pool worker") and kinds[pid] == "other":
            kinds[pid] = "worker"
    counts: dict[str, int] = defaultdict(int)
    names = {}
    for pid, kind in kinds.items():
        counts[kind] += 1
        names[pid] = kind if kind == "cli" else f"{kind}{counts[kind]}"
    return names


def phases(marks: list[Mark]) -> dict[str, dict[str, float]]:
    """CPU seconds per process: total (at its last mark), in training, and the rest."""
    by_pid: dict[str, list[Mark]] = defaultdict(list)
    for mark in marks:
        by_pid[mark[1]].append(mark)
    spent: dict[str, dict[str, float]] = {}
    for pid, own in by_pid.items():
        training, began = 0.0, None
        for _, _, label, cpu in own:
            if label == TRAINING[0]:
                began = cpu
            elif label == TRAINING[1] and began is not None:
                training, began = training + cpu - began, None
        total = own[-1][3]
        spent[pid] = {"cpu": total, "training": training, "other": total - training}
    return spent


def all_cpu(spent: dict[str, dict[str, float]]) -> float:
    """The CPU of every process of a sweep, from each one's own last mark. Not rusage: pool
    workers are forked by the fork server, which reaps them and is itself reaped by no one the
    caller waits for, so their CPU never reaches the caller's RUSAGE_CHILDREN."""
    return sum(figures["cpu"] for figures in spent.values())
