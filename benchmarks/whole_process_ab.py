"""A/B whole-process benchmark: `ppo-platform run` from two source trees, alternating A B / B A.

Each tree's code runs with this interpreter and `PYTHONPATH=<tree>/platform:<tree>` (its tracking
and evaluation children get the same code), a fresh platform home per tree, one untimed
warm-up each. Medians with min and max, and the load at each start.

    python benchmarks/whole_process_ab.py before=/path/to/tree-a after=. --pairs 5 --steps 256 20000
    # evaluation off:
    ... --set evaluation.every_timesteps=0 --set evaluation.episodes=1
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from whole_process import run_once

parser = argparse.ArgumentParser()
parser.add_argument("trees", nargs=2, help="NAME=PATH of the two source trees")
parser.add_argument("--pairs", type=int, default=3)
parser.add_argument("--steps", type=int, nargs="+", default=[256, 20000])
parser.add_argument("--out", type=Path, default=None, help="write the medians as JSON here")
parser.add_argument(
    "--set", action="append", default=[], help="a spec override for both trees (repeatable)"
)
arguments = parser.parse_args()
PY = sys.executable
TREES = dict(tree.split("=", 1) for tree in arguments.trees)
pairs, steps_list = arguments.pairs, arguments.steps
results = {}
for steps in steps_list:
    envs, cmds = {}, {}
    for name, tree in TREES.items():
        home = tempfile.mkdtemp(prefix=f"ab_{name}_")
        envs[name] = {
            **os.environ,
            "PPO_PLATFORM_HOME": home,
            "PYTHONPATH": f"{tree}/platform:{tree}",
            "OMP_NUM_THREADS": "1",
        }
        cmds[name] = [
            PY,
            "-P",  # no working directory on sys.path: each tree's own trainers, not this one's
            "-m",
            "ppo_platform.cli",
            "run",
            f"{tree}/specs/cartpole.yaml",
            "--set",
            f"budget.total_timesteps={steps}",
            *(arg for override in arguments.set for arg in ("--set", override)),
            "--quiet",
        ]
    for name in TREES:  # warm-up
        run_once(cmds[name], envs[name])
    samples = {name: [] for name in TREES}
    for pair in range(pairs):
        for name in TREES if pair % 2 == 0 else reversed(list(TREES)):
            s = run_once(cmds[name], envs[name])
            samples[name].append(s)
            print(
                f"{steps:>6} pair {pair + 1} {name:5} wall {s['wall_s']:6.2f} s "
                f"cpu {s['cpu_s']:6.2f} s load {s['load1_at_start']:.1f}",
                flush=True,
            )
    results[steps] = {
        n: {k: statistics.median([x[k] for x in v]) for k in ("wall_s", "cpu_s", "peak_rss_mib")}
        | {
            "min_wall": min(x["wall_s"] for x in v),
            "max_wall": max(x["wall_s"] for x in v),
            "loads": [round(x["load1_at_start"], 1) for x in v],
        }
        for n, v in samples.items()
    }
print(json.dumps(results, indent=1))
if arguments.out:
    arguments.out.write_text(json.dumps(results, indent=1))
