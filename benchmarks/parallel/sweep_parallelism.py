"""Wall and CPU time of a 4-run sweep on 2 worker processes vs the same 4 runs on one worker.

    .venv/bin/python benchmarks/sweep_parallelism.py [--steps 20000] [--repeats 1] [--out FILE]

Each measurement is one whole `ppo-platform sweep` process (what a user waits for: start-up,
warm workers, MLflow parent and child runs, training, the comparison report, exit) in a fresh
PPO_PLATFORM_HOME, 1 and 2 workers alternately. With `PPO_PLATFORM_TRACE_TIMES=1` every
process marks its CPU: CPU is the sum of every process's own last mark (workers forked by the
fork server never reach the caller's rusage), and the members' training (`learn: begins` ->
`learn: done`) is told apart from the rest: the CPU a sweep pays beyond training, the figure
to read on a loaded machine. The wall-time fixed
cost per sweep is estimated from the medians as 2 x T(2 workers) - T(1 worker) (4 members:
T(1) = F + 4m, T(2) = F + 2m). The migrated empty MLflow store new homes are copied from is
made first, once per machine (`tracking/sqlite_store.py`), so no measurement pays for it.
The runs: specs/cartpole.yaml (rl-zoo's tuned CartPole PPO) with seeds 0-3. Writes a markdown
table to benchmarks/results/sweep_parallelism.md (or --out: keep loaded numbers out of it).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "platform"), str(REPO / "benchmarks")]

from sweep_timeline import TRACE, all_cpu, phases  # noqa: E402

RUN_SECONDS = re.compile(r"final eval return \S+ in ([0-9.]+) s \(run")


def measure(workers: int, steps: int) -> dict[str, float]:
    """One whole `ppo-platform sweep`: wall, CPU (all processes), members' training CPU and
    the sum of the members' own run times."""
    command = [str(Path(sys.executable).with_name("ppo-platform")), "sweep", "specs/cartpole.yaml"]
    command += ["--workers", str(workers)]
    for override in (
        f"budget.total_timesteps={steps}",
        "evaluation.every_timesteps=5000",
        "checkpoints.every_timesteps=0",
        "name=bench-sweep",
        "sweep.seeds=[0, 1, 2, 3]",
    ):
        command += ["--set", override]
    with tempfile.TemporaryDirectory(prefix="sweep-bench-") as home:
        env = {**os.environ, "PPO_PLATFORM_HOME": home, "PPO_PLATFORM_TRACE_TIMES": "1"}
        env.pop("MLFLOW_TRACKING_URI", None)
        load = os.getloadavg()[0]
        started = time.perf_counter()
        process = subprocess.Popen(
            command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        out, err = process.communicate()
        wall = time.perf_counter() - started
    if process.returncode != 0:
        raise SystemExit(f"benchmark sweep failed:\n{err[-3000:]}")
    marks = [
        (0.0, m[2], m[4], float(m[5] or 0.0))
        for line in err.splitlines()
        if (m := TRACE.match(line))
    ]
    spent = phases(marks)
    training = sum(figures["training"] for figures in spent.values())
    cpu = all_cpu(spent)  # every process's own marks: forked workers are not our children
    runs = sum(float(seconds) for seconds in RUN_SECONDS.findall(out))
    return {"wall": wall, "cpu": cpu, "training": training, "runs": runs, "load": load}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000, help="env steps per run")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument(
        "--out", type=Path, default=REPO / "benchmarks" / "results" / "sweep_parallelism.md"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sweep-bench-store-") as folder:
        from ppo_platform.tracking.sqlite_store import create_sqlite_store

        create_sqlite_store(f"sqlite:///{folder}/mlflow.db")  # the template, once per machine
    rows = []
    taken: dict[int, list[dict[str, float]]] = {1: [], 2: []}
    for repeat in range(args.repeats):
        for workers in (1, 2):
            m = measure(workers, args.steps)
            taken[workers].append(m)
            rows.append(
                f"| {repeat + 1} | {workers} | {m['wall']:.1f} | {m['cpu']:.1f} | "
                f"{m['training']:.1f} | {m['cpu'] - m['training']:.1f} | {m['runs']:.1f} | "
                f"{m['load']:.1f} |"
            )
            print(rows[-1], flush=True)

    def median(workers: int, key: str) -> float:
        return statistics.median(m[key] for m in taken[workers])

    sequential, parallel = median(1, "wall"), median(2, "wall")
    beyond = {w: median(w, "cpu") - median(w, "training") for w in (1, 2)}
    loads = [m["load"] for ms in taken.values() for m in ms]
    text = "\n".join(
        [
            "# Sweep parallelism: 4 runs on 2 workers vs one after another",
            "",
            f"Command: `.venv/bin/python benchmarks/sweep_parallelism.py --steps {args.steps} "
            f"--repeats {args.repeats}` ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)",
            "",
            f"Runs: specs/cartpole.yaml (CartPole-v1, rl-zoo's tuned PPO, K = 20) with seeds 0-3, "
            f"{args.steps} env steps each, eval every 5000 steps; one torch thread per worker. "
            f"Machine: {os.cpu_count()} cores, Python {platform.python_version()}; 1-min load "
            f"{min(loads):.1f}-{max(loads):.1f} before the measurements. Each is one whole "
            "`ppo-platform sweep` process (start-up, warm workers, MLflow runs, training, "
            "report, exit) in a fresh store; CPU is its whole process tree's, of which "
            "'training' is the members' `learn` (from the processes' own time marks) and "
            "'beyond training' everything else the sweep pays.",
            "",
            "| repeat | workers | wall (s) | CPU (s) | training CPU (s) | CPU beyond training (s) "
            "| sum of run times (s) | load avg before |",
            "|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            f"**Wall-time ratio (2 workers / 1 worker, median): {parallel / sequential:.2f}** "
            f"({parallel:.1f} s vs {sequential:.1f} s; speed-up {sequential / parallel:.2f}x). "
            f"Fixed cost per sweep, estimated as 2 x T(2) - T(1): "
            f"{2 * parallel - sequential:.1f} s. CPU beyond training (median): "
            f"{beyond[1]:.1f} s on 1 worker, {beyond[2]:.1f} s on 2.",
            "",
            "The machine may be shared: the load average column shows how busy it was when each "
            "measurement started; above 2 (the core count) other work was competing for the "
            "cores and wall times say little, CPU times still do.",
            "",
        ]
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
