"""The tries that chose the group estimators' setting in specs/lm_compare.yaml, re-run.

GRPO on the demo (`specs/lm_arithmetic.yaml`), seed 0 (not in the comparison's seeds 1-5), one
run per try, `ppo-platform run` with the try's `--set`s; each scored by its final greedy
held-out accuracy (`eval/mean_reward`, reward exact_answer, the 200 held-out prompts) against
the SFT model every run starts from. Builds the demo in a fresh platform home first. Writes
benchmarks/results/lm_grpo_tries.{json,md}.

    nice -n 10 python -m benchmarks.learning.lm_grpo_tries --parallel 2
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.harness import ROOT, command_line, load1, machine, measured, write_results

SPEC = ROOT / "specs" / "lm_arithmetic.yaml"
GRPO = ("advantage.estimator=grpo", "budget.seed=0")
# (what the try changes from the demo spec, in words; its --set overrides)
TRIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "group 8 x 16 prompts, learning rate 1e-4, 100 updates",
        ("advantage.group_size=8", "lm.prompts_per_update=16", "budget.updates=100"),
    ),
    (
        "group 8 x 16 prompts, learning rate 3e-5",
        ("advantage.group_size=8", "lm.prompts_per_update=16", "update.learning_rate=3e-5"),
    ),
    (
        "group 8 x 16 prompts, learning rate 3e-5, lm.kl.beta 0.2",
        (
            "advantage.group_size=8",
            "lm.prompts_per_update=16",
            "update.learning_rate=3e-5",
            "lm.kl.beta=0.2",
        ),
    ),
    (
        "group 4 x 32 prompts, learning rate 1e-4, update.epochs 2",
        ("advantage.group_size=4", "lm.prompts_per_update=32", "update.epochs=2"),
    ),
    (
        "group 4 x 32 prompts, learning rate 5e-5 (the comparison's)",
        ("advantage.group_size=4", "lm.prompts_per_update=32", "update.learning_rate=5e-5"),
    ),
)


def run_command(overrides: tuple[str, ...], name: str) -> list[str]:
    """The CLI run of one try, under an experiment name of its own."""
    sets = [part for value in (*GRPO, *overrides, f"name={name}") for part in ("--set", value)]
    return [str(Path(sys.executable).parent / "ppo-platform"), "run", str(SPEC), "--quiet", *sets]


def final_accuracy(client: Any, name: str) -> dict[str, Any]:
    """The try's run: its status, its updates and its last held-out greedy accuracy."""
    (experiment,) = [e for e in client.search_experiments() if e.name == name]
    (run,) = client.search_runs([experiment.experiment_id])
    history = client.get_metric_history(run.info.run_id, "eval/mean_reward")
    last = max(history, key=lambda m: m.step) if history else None
    return {
        "run_id": run.info.run_id,
        "status": run.info.status,
        "updates": int(run.data.params.get("budget.updates", 0)),
        "final_accuracy": last.value if last is not None else None,
    }


def train_and_score(parallel: int, home: Path) -> dict[str, Any]:
    """The demo, then each try (`parallel` at a time), scored from its MLflow run."""
    from mlflow.tracking import MlflowClient

    from ppo_platform.settings import get_settings
    from ppo_platform.training.lm_demo import init_demo

    demo = init_demo(get_settings())
    client = MlflowClient(f"sqlite:///{home / 'mlflow.db'}")
    client.search_experiments()  # creates the store once: parallel first writers collide
    env = {**os.environ, "PPO_PLATFORM_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    named = [(f"grpo-try-{i}", words, sets) for i, (words, sets) in enumerate(TRIES)]
    failures: dict[str, str] = {}
    for start in range(0, len(named), parallel):
        batch = named[start : start + parallel]
        running = [
            (name, subprocess.Popen(run_command(sets, name), env=env, text=True, stderr=-1))
            for name, _, sets in batch
        ]
        for name, process in running:
            _, stderr = process.communicate()
            if process.returncode != 0:
                failures[name] = stderr[-2000:]
    rows = [
        {"try": words, "overrides": list(sets), **final_accuracy(client, name)}
        for name, words, sets in named
        if name not in failures
    ]
    return {"sft_accuracy": demo.sft_accuracy, "rows": rows, "failures": failures}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--parallel", type=int, default=2, choices=range(1, 6), help="Runs at once (2 cores: 2)."
    )
    args = parser.parse_args()
    os.environ["HF_HUB_OFFLINE"] = "1"
    home = Path(tempfile.mkdtemp(prefix="lm_grpo_tries_"))
    os.environ["PPO_PLATFORM_HOME"] = str(home)
    load_before = load1()
    scored, timing = measured(lambda: train_and_score(args.parallel, home))
    result = {
        "command": command_line("benchmarks.learning.lm_grpo_tries"),
        "machine": machine(),
        **scored,
        "wall_seconds": timing["wall_s"],
        "load1_before": load_before,
        "load1_after": load1(),
        "parallel": args.parallel,
    }
    write_results(result, "lm_grpo_tries", render)


def render(result: dict[str, Any]) -> str:
    lines = [
        "# The GRPO tries that chose the group estimators' setting",
        "",
        f"`nice -n 10 {result['command']}` ({result['machine']['cores']} shared CPU cores, "
        f"{result['parallel']} runs at a time, load average {result['load1_before']:.1f} before "
        f"and {result['load1_after']:.1f} after; wall {result['wall_seconds'] / 60:.1f} min).",
        "",
        "GRPO (`advantage.estimator=grpo`) on `specs/lm_arithmetic.yaml`, seed 0, one run per "
        "try. Score: the final greedy accuracy on the 200 held-out prompts; the SFT model every "
        f"run starts from: {result['sft_accuracy']:.3f}.",
        "",
        "| changes from the demo spec | updates | final accuracy | run |",
        "|---|---|---|---|",
    ]
    for row in result["rows"]:
        accuracy = row["final_accuracy"]
        shown = f"{accuracy:.3f}" if accuracy is not None else "not evaluated"
        lines.append(f"| {row['try']} | {row['updates']} | {shown} | `{row['run_id']}` |")
    for name, stderr in result["failures"].items():
        lines += ["", f"{name} failed:", "", "```text", stderr.strip(), "```"]
    lines += [
        "",
        "One seed per try: these rows chose a setting; they are not evidence that one try is "
        "better than another (the comparison's 5 seeds per variant are: lm_compare.md).",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
