"""The phases of one `ppo-platform sweep` as a time line: where a sweep's fixed cost goes.

One whole `ppo-platform sweep` process (specs/cartpole.yaml, seeds 0-3, eval every 5000 steps)
with `PPO_PLATFORM_TRACE_TIMES=1`: every process (the CLI, its tracking process, each warm
worker, any other tracking process) writes `time.perf_counter()` marks to stderr, one clock for
all, each with the CPU seconds its process had used by then (`ppo_platform/tracing.py`).
Printed: the marks relative to the launch with the CPU each process spent since its previous
mark; then the CPU of each process and of the phases a sweep pays once (start-up, parent run,
report, shutdown) against the members' training (`learn: begins` -> `learn: done`). CPU is the
figure to read on a loaded machine: wall time there is mostly waiting for a core.

    .venv/bin/python benchmarks/sweep_timeline.py --workers 2 --steps 20000 [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACE = re.compile(r"^trace (\S+) (\d+) (\S+) ([^\t]*)(?:\t(\S+))?$")
QUIET = ("rows answered", "artifact answered")
TRAINING = ("learn: begins", "learn: done")


def roles(marks: list[tuple[float, str, str, float]]) -> dict[str, str]:
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


def phases(marks: list[tuple[float, str, str, float]]) -> dict[str, dict[str, float]]:
    """CPU seconds per process: total (at its last mark), in training, and the rest."""
    by_pid: dict[str, list[tuple[float, str, str, float]]] = defaultdict(list)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=20_000, help="env steps per member")
    parser.add_argument("--json", type=Path, help="also write the marks and totals here")
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="sweep-timeline-")
    env = {**os.environ, "PPO_PLATFORM_HOME": home, "PPO_PLATFORM_TRACE_TIMES": "1"}
    env.setdefault("OMP_NUM_THREADS", "1")
    overrides = [
        f"budget.total_timesteps={args.steps}",
        "evaluation.every_timesteps=5000",
        "checkpoints.every_timesteps=0",
        "name=bench-sweep",
        "sweep.seeds=[0, 1, 2, 3]",
    ]
    exe = str(Path(sys.executable).with_name("ppo-platform"))
    command = [exe, "sweep", "specs/cartpole.yaml", "--workers", str(args.workers)]
    for override in overrides:
        command += ["--set", override]
    load = os.getloadavg()[0]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    load_after = os.getloadavg()[0]
    if done.returncode != 0:
        sys.exit(done.stderr[-3000:])
    marks = [
        (float(m[1]) - started, m[2], m[4], float(m[5] or 0.0))
        for line in done.stderr.splitlines()
        if (m := TRACE.match(line))
    ]
    names = roles(marks)
    last_cpu: dict[str, float] = {}
    for at, pid, label, cpu in marks:
        spent = cpu - last_cpu.get(pid, 0.0)
        last_cpu[pid] = cpu
        if not label.endswith(QUIET):
            print(f"{at:7.2f} {names[pid]:10} cpu +{spent:5.2f} = {cpu:6.2f}  {label}")
    spent = phases(marks)
    cpu_all = all_cpu(spent)
    print("\nCPU seconds per process (at its last mark): total = training + the rest")
    for pid, figures in spent.items():
        print(
            f"  {names[pid]:10} {figures['cpu']:6.2f} = {figures['training']:6.2f} "
            f"+ {figures['other']:6.2f}"
        )
    training = sum(f["training"] for f in spent.values())
    print(
        f"wall {wall:.2f} s, CPU {cpu_all:.2f} s (all processes' own marks), of which members' "
        f"training (learn) {training:.2f} s and the rest {cpu_all - training:.2f} s; "
        f"1-min load {load:.2f} before, {load_after:.2f} after"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "command": command,
                    "wall_s": wall,
                    "cpu_s": cpu_all,
                    "training_cpu_s": training,
                    "load1": [load, load_after],
                    "processes": {names[pid]: f for pid, f in spent.items()},
                    "marks": [(at, names[pid], label, cpu) for at, pid, label, cpu in marks],
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
