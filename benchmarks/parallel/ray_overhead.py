"""Wall time of a 4-member sweep with the local executor vs the Ray executor, same cores.

    python -m benchmarks.parallel.ray_overhead [--steps 10000] [--pairs 3] [--address HOST:PORT]

Whole processes from the shell: `python -m ppo_platform.cli sweep SPEC --workers 2`, each in a
fresh PPO_PLATFORM_HOME (its own SQLite MLflow store: the stores are the same for both, only the
executor differs), alternating local and Ray (A B A B ...). Ray: a cluster of two one-CPU nodes
on this machine (started here unless --address is given), so both use two cores. The members:
specs/cartpole.yaml, seeds 0-3. Writes benchmarks/results/ray_overhead.{md,json}: medians with
min-max, the ratio Ray / local, the load average beside every timing, machine and versions.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from pathlib import Path

from benchmarks.harness import (
    ROOT,
    alternate,
    command_line,
    header,
    machine,
    run_process,
    summary,
    versions,
    write_results,
)
from benchmarks.harness.services import ray_cluster

REPO = ROOT


def sweep_spec(folder: Path, steps: int) -> Path:
    import yaml

    spec = yaml.safe_load((REPO / "specs" / "cartpole.yaml").read_text())
    spec.update(
        name="bench-ray",
        budget={"total_timesteps": steps, "seed": 0},
        evaluation={"every_timesteps": 0, "episodes": 10},
        checkpoints={"every_timesteps": 0},
        sweep={"grid": {}, "seeds": [0, 1, 2, 3]},
    )
    path = folder / "bench-ray.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def one_sweep(spec: Path, executor: str, address: str | None) -> dict[str, float | str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "platform"), str(REPO)])
    env.pop("MLFLOW_TRACKING_URI", None)
    env["PPO_PLATFORM_EXECUTOR"] = executor
    if address:
        env["PPO_PLATFORM_RAY_ADDRESS"] = address
    with tempfile.TemporaryDirectory(prefix="ray-bench-") as home:
        env["PPO_PLATFORM_HOME"] = home
        command = [sys.executable, "-m", "ppo_platform.cli", "sweep", str(spec), "--workers", "2"]
        sample = run_process(command, env)
    return {"executor": executor, "wall": round(sample["wall_s"], 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10_000, help="env steps per member")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--address", help="an existing Ray cluster (default: start one)")
    parser.add_argument("--out", default="ray_overhead", help="results file stem")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as stack:
        spec = sweep_spec(Path(folder), args.steps)
        address = args.address or stack.enter_context(ray_cluster(nodes=2))
        samples = alternate(
            {e: lambda _, e=e: one_sweep(spec, e, address) for e in ("local", "ray")},
            args.pairs,
            warmup=False,
        )
    local, ray = (summary(r["wall"] for r in samples[e]) for e in ("local", "ray"))
    report = {
        "command": command_line("benchmarks.parallel.ray_overhead"),
        "machine": machine(),
        "versions": versions("ray", "torch", "stable-baselines3", "mlflow"),
        "sweep": f"4 members (specs/cartpole.yaml, seeds 0-3), {args.steps} env steps each, "
        "2 workers / 2 one-CPU Ray nodes",
        "rows": [
            {**row, "load1": round(row.pop("load1_at_start"), 2)}
            for pair in zip(samples["local"], samples["ray"], strict=True)
            for row in pair
        ],
        "local": local,
        "ray": ray,
        "ratio_median": round(ray["median"] / local["median"], 3),
    }
    write_results(report, args.out, markdown)


def markdown(report: dict) -> str:
    lines = [
        *header("Ray executor overhead: a 4-member sweep, local vs Ray, same cores", report),
        f"Sweep: {report['sweep']}. Whole processes (`ppo-platform sweep`), alternating.",
        "",
        "| run | executor | wall (s) | load avg (1 min) at start |",
        "|---|---|---|---|",
    ]
    for index, row in enumerate(report["rows"], 1):
        lines.append(f"| {index} | {row['executor']} | {row['wall']} | {row['load1']} |")
    lines += ["", "| executor | median (s) | min - max (s) |", "|---|---|---|"]
    for name in ("local", "ray"):
        s = report[name]
        lines.append(f"| {name} | {s['median']:.2f} | {s['min']:.2f} - {s['max']:.2f} |")
    ratio = report["ratio_median"]
    lines += ["", f"Ratio Ray / local (medians): **{ratio}x** (aim: <= 1.15x).", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
