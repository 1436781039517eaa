"""Wall and CPU time of a 4-run sweep on 2 worker processes vs the same 4 runs on one worker.

    python -m benchmarks.parallel.sweep_parallelism [--steps 20000] [--repeats 1] [--out FILE]

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
table to benchmarks/results/sweep_parallelism.md and .json (or --out STEM: keep loaded numbers
out of them).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks.harness import (
    all_cpu,
    alternate,
    command_line,
    machine,
    machine_line,
    parse_marks,
    phases,
    run_process,
    write_results,
)

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
        sample = run_process(command, env, keep_stdout=True, keep_stderr=True)
    spent = phases(parse_marks(sample["stderr"]))
    training = sum(figures["training"] for figures in spent.values())
    cpu = all_cpu(spent)  # every process's own marks: forked workers are not our children
    runs = sum(float(seconds) for seconds in RUN_SECONDS.findall(sample["stdout"]))
    return {"wall": sample["wall_s"], "cpu": cpu, "training": training, "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000, help="env steps per run")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--out", default="sweep_parallelism", help="results file stem")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sweep-bench-store-") as folder:
        from ppo_platform.tracking.sqlite_store import create_sqlite_store

        create_sqlite_store(f"sqlite:///{folder}/mlflow.db")  # the template, once per machine
    taken = alternate(
        {f"{w}": lambda _, w=w: measure(w, args.steps) for w in (1, 2)},
        args.repeats,
        warmup=False,
        order="round_robin",
    )
    report = {
        "command": command_line("benchmarks.parallel.sweep_parallelism"),
        "machine": machine(),
        "steps": args.steps,
        "samples": taken,
    }
    write_results(report, args.out, render)


def render(report: dict) -> str:
    taken = report["samples"]

    def median(workers: str, key: str) -> float:
        return statistics.median(m[key] for m in taken[workers])

    rows = [
        f"| {repeat + 1} | {workers} | {m['wall']:.1f} | {m['cpu']:.1f} | "
        f"{m['training']:.1f} | {m['cpu'] - m['training']:.1f} | {m['runs']:.1f} | "
        f"{m['load1_at_start']:.1f} |"
        for repeat in range(len(taken["1"]))
        for workers in ("1", "2")
        for m in [taken[workers][repeat]]
    ]
    sequential, parallel = median("1", "wall"), median("2", "wall")
    beyond = {w: median(w, "cpu") - median(w, "training") for w in ("1", "2")}
    loads = [m["load1_at_start"] for ms in taken.values() for m in ms]
    return "\n".join(
        [
            "# Sweep parallelism: 4 runs on 2 workers vs one after another",
            "",
            f"Command: `{report['command']}`",
            "",
            machine_line(report["machine"]),
            "",
            f"Runs: specs/cartpole.yaml (CartPole-v1, rl-zoo's tuned PPO, K = 20) with seeds 0-3, "
            f"{report['steps']} env steps each, eval every 5000 steps; one torch thread per "
            f"worker. 1-min load {min(loads):.1f}-{max(loads):.1f} before the measurements. "
            "Each is one whole `ppo-platform sweep` process (start-up, warm workers, MLflow runs, "
            "training, report, exit) in a fresh store; CPU is its whole process tree's, of which "
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
            f"{beyond['1']:.1f} s on 1 worker, {beyond['2']:.1f} s on 2.",
            "",
            "The machine may be shared: the load average column shows how busy it was when each "
            "measurement started; above 2 (the core count) other work was competing for the "
            "cores and wall times say little, CPU times still do.",
            "",
        ]
    )


if __name__ == "__main__":
    main()
