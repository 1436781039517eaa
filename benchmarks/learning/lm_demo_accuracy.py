"""SFT vs PPO held-out accuracy of the language-model demo, over seeds.

Builds the demo (`ppo-platform lm init-demo`) in a fresh platform home, then runs
`ppo-platform run specs/lm_arithmetic.yaml --set budget.seed=S` for each seed (in parallel
processes, at most --parallel at once), and measures greedy accuracy on the 200 held-out
prompts of the SFT model and of each run's final policy. Also: the first-fifth vs last-fifth
mean of lm/reward_mean and the final lm/kl_ref of each run. Writes
benchmarks/results/lm_demo_accuracy.{json,md}.

    nice -n 10 python -m benchmarks.learning.lm_demo_accuracy --seeds 0 1 2 --parallel 2
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    ROOT,
    children_cpu_s,
    command_line,
    load1,
    machine,
    measured,
    write_results,
)

REPO = ROOT
SAMPLES = 4  # sampled responses per held-out prompt (temperature 1, as PPO samples)


def run_seed(home: Path, seed: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PPO_PLATFORM_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    command = [
        str(Path(sys.executable).parent / "ppo-platform"), "run",
        str(REPO / "specs" / "lm_arithmetic.yaml"), "--quiet", "--set", f"budget.seed={seed}",
    ]  # fmt: skip
    return subprocess.Popen(command, env=env, text=True, stdout=subprocess.PIPE)


def train_and_score(seeds: list[int], parallel: int, home: Path) -> dict[str, Any]:
    """The demo, the PPO runs of `seeds` (`parallel` at a time) and their held-out accuracy."""
    from mlflow.tracking import MlflowClient

    from ppo_platform.settings import get_settings
    from ppo_platform.training.lm_demo import heldout_accuracy, init_demo, split_records

    demo = init_demo(get_settings())
    _, heldout = split_records()
    client = MlflowClient(f"sqlite:///{home / 'mlflow.db'}")
    client.search_experiments()  # creates the store once: parallel first writers collide
    sft_sampled = heldout_accuracy(demo.model, heldout, greedy=False, samples=SAMPLES)
    outputs: dict[int, str] = {}
    for start in range(0, len(seeds), parallel):
        processes = {s: run_seed(home, s) for s in seeds[start : start + parallel]}
        outputs.update({seed: p.communicate()[0] for seed, p in processes.items()})
    rows = []
    for run in client.search_runs(
        [e.experiment_id for e in client.search_experiments() if e.name == "lm-arithmetic"]
    ):
        rewards = [m.value for m in client.get_metric_history(run.info.run_id, "lm/reward_mean")]
        fifth = max(len(rewards) // 5, 1)
        final = home / "runs" / run.info.run_id / "final" / "model"
        rows.append(
            {
                "seed": int(run.data.params["budget.seed"]),
                "status": run.info.status,
                "sft_accuracy": demo.sft_accuracy,
                "ppo_accuracy": heldout_accuracy(final, heldout, greedy=True),
                "sft_sampled_accuracy": sft_sampled,
                "ppo_sampled_accuracy": heldout_accuracy(
                    final, heldout, greedy=False, samples=SAMPLES
                ),
                "reward_first_fifth": sum(rewards[:fifth]) / fifth,
                "reward_last_fifth": sum(rewards[-fifth:]) / fifth,
                "kl_ref_final": run.data.metrics.get("lm/kl_ref"),
                "updates": len(rewards),
            }
        )
    rows.sort(key=lambda r: r["seed"])
    return {"rows": rows, "demo_seconds": demo.seconds, "outputs": outputs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--parallel", type=int, default=2, help="Runs at once (2 cores: 2).")
    args = parser.parse_args()
    os.environ["HF_HUB_OFFLINE"] = "1"
    home = Path(tempfile.mkdtemp(prefix="lm_demo_bench_"))
    os.environ["PPO_PLATFORM_HOME"] = str(home)
    cpu_before = children_cpu_s()
    scored, timing = measured(lambda: train_and_score(args.seeds, args.parallel, home))
    result = {
        "command": command_line("benchmarks.learning.lm_demo_accuracy"),
        "machine": machine(),
        **scored,
        "wall_seconds": timing["wall_s"],
        "runs_cpu_seconds": children_cpu_s() - cpu_before,
        "load1": load1(),
        "parallel": args.parallel,
    }
    write_results(result, "lm_demo_accuracy", render)


def render(result: dict[str, Any]) -> str:
    lines = [
        "# Language-model demo: SFT vs PPO held-out accuracy",
        "",
        f"`nice -n 10 {result['command']}` ({result['machine']['cores']} shared CPU cores, load "
        f"average {result['load1']:.1f} at the end; wall {result['wall_seconds']:.0f} s with "
        f"{result['parallel']} runs at a time; the runs' CPU time "
        f"{result['runs_cpu_seconds']:.0f} s in all).",
        "",
        "Accuracy on the 200 held-out prompts: greedy, and sampled at temperature 1 (4 samples "
        "per prompt; what PPO optimises). lm/reward_mean is the training rollouts' mean reward.",
        "",
        "| seed | SFT greedy | PPO greedy | SFT sampled | PPO sampled | reward first fifth | "
        "last fifth | final lm/kl_ref (target 2.0) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['seed']} | {r['sft_accuracy']:.3f} | {r['ppo_accuracy']:.3f} | "
            f"{r['sft_sampled_accuracy']:.3f} | {r['ppo_sampled_accuracy']:.3f} | "
            f"{r['reward_first_fifth']:.3f} | {r['reward_last_fifth']:.3f} | "
            f"{r['kl_ref_final']:.3f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
