"""Wall time of a 4-run sweep on 2 worker processes vs the same 4 runs one after another.

    .venv/bin/python benchmarks/sweep_parallelism.py [--steps 20000] [--repeats 1]

Each measurement is a full `run_sweep` (worker start-up, MLflow parent and child runs, training,
the comparison report) in a fresh PPO_PLATFORM_HOME, so both modes pay the same fixed costs.
The migrated empty MLflow store that new homes are copied from is made first, once per machine
(`tracking/sqlite_store.py`), so no measurement pays for it. The fixed cost per sweep is
estimated from the medians as 2 x T(2 workers) - T(1 worker) (4 members: T(1) = F + 4m,
T(2) = F + 2m).
The runs: specs/cartpole.yaml (rl-zoo's tuned CartPole PPO) with seeds 0-3. Writes a markdown
table to benchmarks/results/sweep_parallelism.md (or --out).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def measure(workers: int, steps: int) -> tuple[float, float]:
    """-> (wall seconds of the sweep, sum of the members' own training seconds)."""
    from ppo_platform.settings import get_settings
    from ppo_platform.spec.loader import load_spec
    from ppo_platform.sweeps import run_sweep

    with tempfile.TemporaryDirectory(prefix="sweep-bench-") as home:
        os.environ["PPO_PLATFORM_HOME"] = home
        os.environ.pop("MLFLOW_TRACKING_URI", None)
        get_settings.cache_clear()
        spec = load_spec(
            REPO / "specs" / "cartpole.yaml",
            [
                f"budget.total_timesteps={steps}",
                "evaluation.every_timesteps=5000",
                "checkpoints.every_timesteps=0",
                "name=bench-sweep",
                "sweep.seeds=[0, 1, 2, 3]",
            ],
        )
        started = time.perf_counter()
        result = run_sweep(spec, workers=workers)
        wall = time.perf_counter() - started
        get_settings.cache_clear()
    if result.failed:
        raise SystemExit(f"benchmark sweep failed: {result.summary()}")
    return wall, sum(o.seconds or 0.0 for o in result.outcomes)


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
    walls: dict[int, list[float]] = {1: [], 2: []}
    for repeat in range(args.repeats):
        for workers in (1, 2):
            load_before = os.getloadavg()[0]
            wall, train = measure(workers, args.steps)
            walls[workers].append(wall)
            rows.append(
                f"| {repeat + 1} | {workers} | {wall:.1f} | {train:.1f} | {load_before:.1f} |"
            )
            print(rows[-1], flush=True)
    sequential, parallel = statistics.median(walls[1]), statistics.median(walls[2])
    text = "\n".join(
        [
            "# Sweep parallelism: 4 runs on 2 workers vs one after another",
            "",
            f"Command: `.venv/bin/python benchmarks/sweep_parallelism.py --steps {args.steps} "
            f"--repeats {args.repeats}`",
            "",
            f"Runs: specs/cartpole.yaml (CartPole-v1, rl-zoo's tuned PPO, K = 20) with seeds 0-3, "
            f"{args.steps} env steps each, eval every 5000 steps; one torch thread per worker. "
            f"Machine: {os.cpu_count()} cores, Python {platform.python_version()}. "
            "Wall time is the whole `run_sweep` (worker start-up, MLflow runs, training, "
            "report) in a fresh store.",
            "",
            "| repeat | workers | sweep wall time (s) | sum of run times (s) | load avg before |",
            "|---|---|---|---|---|",
            *rows,
            "",
            f"**Wall-time ratio (2 workers / 1 worker, median): {parallel / sequential:.2f}** "
            f"({parallel:.1f} s vs {sequential:.1f} s; speed-up {sequential / parallel:.2f}x). "
            f"Fixed cost per sweep, estimated as 2 x T(2) - T(1): "
            f"{2 * parallel - sequential:.1f} s.",
            "",
            "The machine is shared: the load average column shows how busy it was when each "
            "measurement started; above 2 (the core count) other work was competing for the cores.",
            "",
        ]
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
