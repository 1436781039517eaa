"""The phases of one `ppo-platform sweep` as a time line: where a sweep's fixed cost goes.

One whole `ppo-platform sweep` process (specs/cartpole.yaml, seeds 0-3, eval every 5000 steps)
with `PPO_PLATFORM_TRACE_TIMES=1`: every process (the CLI, its tracking process, each warm
worker and its tracking process) writes `time.perf_counter()` marks to stderr, one clock for
all, printed relative to the launch, with the CPU time of the whole process tree.

    .venv/bin/python benchmarks/sweep_timeline.py --workers 2 --steps 20000
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACE = re.compile(r"^trace (\S+) (\d+) (\S+) (.*)$")
QUIET = ("rows answered", "artifact answered")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=20_000, help="env steps per member")
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
    if done.returncode != 0:
        sys.exit(done.stderr[-3000:])
    names: dict[str, str] = {}
    for line in done.stderr.splitlines():
        if (mark := TRACE.match(line)) and not mark[4].endswith(QUIET):
            process = names.setdefault(mark[2], f"p{len(names)}")
            print(f"{float(mark[1]) - started:7.2f} {process:4} {mark[4]}")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime
    print(f"wall {wall:.2f} s, CPU {cpu:.2f} s (all processes), load average before {load:.2f}")
    print("p0 is the CLI; the other numbers are processes in order of their first mark.")


if __name__ == "__main__":
    main()
