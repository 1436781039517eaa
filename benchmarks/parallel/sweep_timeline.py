"""The phases of one `ppo-platform sweep` as a time line: where a sweep's fixed cost goes.

One whole `ppo-platform sweep` process (specs/cartpole.yaml, seeds 0-3, eval every 5000 steps)
with `PPO_PLATFORM_TRACE_TIMES=1`: every process (the CLI, its tracking process, each warm
worker, any other tracking process) writes `time.perf_counter()` marks to stderr, one clock for
all, each with the CPU seconds its process had used by then (`ppo_platform/tracing.py`).
Printed: the marks relative to the launch with the CPU each process spent since its previous
mark; then the CPU of each process and of the phases a sweep pays once (start-up, parent run,
report, shutdown) against the members' training (`learn: begins` -> `learn: done`). CPU is the
figure to read on a loaded machine: wall time there is mostly waiting for a core.

    python -m benchmarks.parallel.sweep_timeline --workers 2 --steps 20000 [--json FILE]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from benchmarks.harness import (
    all_cpu,
    load1,
    parse_marks,
    phases,
    roles,
    run_process,
    write_results,
)

QUIET = ("rows answered", "artifact answered")


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
    load = load1()
    sample = run_process(command, env, keep_stderr=True)
    wall, load_after = sample["wall_s"], load1()
    marks = parse_marks(sample["stderr"], sample["started_at"])
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
        report = {
            "command": command,
            "wall_s": wall,
            "cpu_s": cpu_all,
            "training_cpu_s": training,
            "load1": [load, load_after],
            "processes": {names[pid]: f for pid, f in spent.items()},
            "marks": [(at, names[pid], label, cpu) for at, pid, label, cpu in marks],
        }
        write_results(report, args.json.stem, folder=args.json.parent, echo=False)


if __name__ == "__main__":
    main()
