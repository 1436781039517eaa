"""A/B whole-process benchmark: `ppo-platform run` from two source trees, alternating A B / B A.

Each tree's code runs with this interpreter and `PYTHONPATH=<tree>/platform:<tree>` (its tracking
and evaluation children get the same code), a fresh platform home per tree, one untimed
warm-up each. Medians with min and max, and the load at each start.

    python -m benchmarks.overhead.whole_process_ab before=/path/to/tree-a after=. --pairs 5 \\
        --steps 256 20000
    # evaluation off:
    ... --set evaluation.every_timesteps=0 --set evaluation.episodes=1
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from benchmarks.harness import (
    alternate,
    command_line,
    machine,
    run_process,
    summarize,
    write_results,
)


def tree_command(tree: str, steps: int, overrides: list[str]) -> list[str]:
    return [
        sys.executable,
        "-P",  # no working directory on sys.path: each tree's own trainers, not this one's
        "-m",
        "ppo_platform.cli",
        "run",
        f"{tree}/specs/cartpole.yaml",
        "--set",
        f"budget.total_timesteps={steps}",
        *(arg for override in overrides for arg in ("--set", override)),
        "--quiet",
    ]


def tree_env(name: str, tree: str) -> dict[str, str]:
    return {
        **os.environ,
        "PPO_PLATFORM_HOME": tempfile.mkdtemp(prefix=f"ab_{name}_"),
        "PYTHONPATH": f"{tree}/platform:{tree}",
        "OMP_NUM_THREADS": "1",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs=2, help="NAME=PATH of the two source trees")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--steps", type=int, nargs="+", default=[256, 20000])
    parser.add_argument("--out", type=Path, default=None, help="write the medians as JSON here")
    parser.add_argument(
        "--set", action="append", default=[], help="a spec override for both trees (repeatable)"
    )
    args = parser.parse_args()
    trees = dict(tree.split("=", 1) for tree in args.trees)
    results = {}
    for steps in args.steps:
        envs = {name: tree_env(name, tree) for name, tree in trees.items()}
        commands = {name: tree_command(tree, steps, args.set) for name, tree in trees.items()}
        variants = {
            name: lambda _, c=commands[name], e=envs[name]: run_process(c, e) for name in trees
        }
        samples = alternate(variants, args.pairs, label=f"{steps:>6} ")
        results[steps] = {
            name: summarize(runs, ("wall_s", "cpu_s", "peak_rss_mib"))
            | {"loads": [round(run["load1_at_start"], 1) for run in runs]}
            for name, runs in samples.items()
        }
    report = {
        "command": command_line("benchmarks.overhead.whole_process_ab"),
        "machine": machine(),
        "results": results,
    }
    if args.out:
        write_results(report, args.out.stem, folder=args.out.parent.resolve())
    else:
        print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
