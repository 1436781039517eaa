"""Wall time of a 4-member sweep with the local executor vs the Ray executor, same cores.

    python benchmarks/ray_overhead.py [--steps 10000] [--pairs 3] [--address HOST:PORT]

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
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # the two-node cluster helper of the tests


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
        load = os.getloadavg()[0]
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "ppo_platform.cli", "sweep", str(spec), "--workers", "2"],
            env=env,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{executor} sweep failed:\n{done.stdout}\n{done.stderr}")
    return {"executor": executor, "wall": round(wall, 2), "load1": round(load, 2)}


def summary(rows: list[dict[str, float | str]], executor: str) -> dict[str, float]:
    walls = [float(r["wall"]) for r in rows if r["executor"] == executor]
    return {"median": statistics.median(walls), "min": min(walls), "max": max(walls)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10_000, help="env steps per member")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--address", help="an existing Ray cluster (default: start one)")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    args = parser.parse_args()
    from cluster_services import ray_cluster

    rows: list[dict[str, float | str]] = []
    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as stack:
        spec = sweep_spec(Path(folder), args.steps)
        address = args.address or stack.enter_context(ray_cluster(nodes=2))
        for pair in range(args.pairs):
            for executor in ("local", "ray") if pair % 2 == 0 else ("ray", "local"):
                rows.append(one_sweep(spec, executor, address))
                print(rows[-1], flush=True)
    local, ray = summary(rows, "local"), summary(rows, "ray")
    report = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores",
        "versions": {p: version(p) for p in ("ray", "torch", "stable-baselines3", "mlflow")},
        "python": platform.python_version(),
        "sweep": f"4 members (specs/cartpole.yaml, seeds 0-3), {args.steps} env steps each, "
        "2 workers / 2 one-CPU Ray nodes",
        "rows": rows,
        "local": local,
        "ray": ray,
        "ratio_median": round(ray["median"] / local["median"], 3),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ray_overhead.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / "ray_overhead.md").write_text(markdown(report))
    print(markdown(report))


def markdown(report: dict) -> str:
    lines = [
        "# Ray executor overhead: a 4-member sweep, local vs Ray, same cores",
        "",
        f"`python benchmarks/ray_overhead.py` on {report['date']}, {report['machine']}, "
        f"Python {report['python']}, "
        + ", ".join(f"{k} {v}" for k, v in report["versions"].items())
        + f". Sweep: {report['sweep']}. Whole processes (`ppo-platform sweep`), alternating.",
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
