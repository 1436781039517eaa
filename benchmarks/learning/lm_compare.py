"""The language-model demo as a comparison: PPO (value head), GRPO, RLOO and GSPO on 5 seeds
each (`specs/lm_compare.yaml`), scored by held-out greedy accuracy against the SFT model.

    nice -n 10 python -m benchmarks.learning.lm_compare [--workers 2]
    python -m benchmarks.learning.lm_compare --home HOME --parent RUN_ID   # an earlier sweep

Builds the demo (`init_demo`) in a fresh platform home and runs `ppo-platform sweep
specs/lm_compare.yaml` there as one whole process; or reads a sweep already run in HOME. Then
compares its runs as `ppo-platform compare PARENT --baseline <PPO>` does (IQM, bootstrap
intervals, verdicts; `reports.compare`) and counts, per variant, the seeds whose final greedy
held-out accuracy is above the SFT model's. Writes benchmarks/results/lm_compare.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    ROOT,
    command_line,
    load_averages,
    machine,
    run_process,
    write_results,
)

SPEC = ROOT / "specs" / "lm_compare.yaml"
BASELINE = "advantage.estimator=gae"  # PPO with the value head: the demo's own trainer


def run_sweep(home: Path, workers: int) -> dict[str, Any]:
    """`ppo-platform sweep` as a whole process in `home` (the demo built there first)."""
    from ppo_platform.settings import Settings
    from ppo_platform.training.lm_demo import init_demo

    init_demo(Settings(home=home))
    env = {**os.environ, "PPO_PLATFORM_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    command = [sys.executable, "-m", "ppo_platform.cli", "sweep", str(SPEC)]
    return run_process([*command, "--workers", str(workers)], env=env)


def sweep_parent(home: Path) -> str:
    """The newest FINISHED sweep parent run of `lm-compare` in `home`'s store."""
    from mlflow.tracking import MlflowClient

    from ppo_platform.tracking import tags as tag

    client = MlflowClient(f"sqlite:///{home / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("lm-compare")
    if experiment is None:
        raise SystemExit(f"{home}: no lm-compare experiment (run the sweep first)")
    runs = client.search_runs(
        [experiment.experiment_id],
        filter_string=f"tags.`{tag.KIND}` = 'sweep' and attributes.status = 'FINISHED'",
        order_by=["attributes.start_time DESC"],
    )
    if not runs:
        raise SystemExit(f"{home}: no finished lm-compare sweep")
    return str(runs[0].info.run_id)


def score(home: Path, parent: str) -> dict[str, Any]:
    """The comparison of the sweep's variants, the SFT model's accuracy, and per variant the
    seeds above it."""
    from mlflow.tracking import MlflowClient

    from ppo_platform.reports.compare import compare_runs
    from ppo_platform.training.lm_demo import greedy_accuracy, split_records

    comparison = compare_runs([parent], f"sqlite:///{home / 'mlflow.db'}", baseline=BASELINE)
    sft = greedy_accuracy(home / "lm" / "arithmetic" / "sft", split_records()[1])
    found = comparison.to_json()
    above = {g["name"]: sum(s > sft for s in g["scores"]) for g in found["groups"]}
    info = MlflowClient(f"sqlite:///{home / 'mlflow.db'}").get_run(parent).info
    return {
        "parent_run_id": parent,
        "parent_wall_s": (info.end_time - info.start_time) / 1000,  # the sweep's parent run
        "sft_accuracy": sft,
        "comparison": found,
        "above": above,
    }


def _ci(pair: list[float]) -> str:
    return f"[{pair[0]:.3f}, {pair[1]:.3f}]"


def render(result: dict[str, Any]) -> str:
    found, sft = result["comparison"], result["sft_accuracy"]
    timing = f" The sweep's parent run lasted {result['parent_wall_s'] / 60:.1f} min."
    lines = [
        "# The language-model demo as a comparison: PPO, GRPO, RLOO, GSPO",
        "",
        f"Command: `{result['command']}`. {result['machine']['cores']} shared CPU cores; "
        f"load average (1, 5, 15 min) {result['load']} when scored.{timing} Sweep parent run "
        f"`{result['parent_run_id']}`.",
        "",
        "Score: final greedy accuracy on the 200 held-out prompts (`eval/mean_reward`, reward "
        f"`exact_answer`), one per run. SFT model (every seed starts from it): {sft:.3f}.",
        "",
        "| variant | seeds | IQM [95% CI] | mean [95% CI] | median | seeds above SFT | scores |",
        "|---|---|---|---|---|---|---|",
    ]
    for g in found["groups"]:
        scores = ", ".join(f"{s:.3f}" for s in g["scores"])
        lines.append(
            f"| {g['name']} | {g['n']} | {g['iqm']:.3f} {_ci(g['iqm_ci'])} | {g['mean']:.3f} "
            f"{_ci(g['mean_ci'])} | {g['median']:.3f} | {result['above'][g['name']]}/{g['n']} "
            f"| {scores} |"
        )
    lines += ["", "| A | B | P(A > B) [95% CI] | verdict |", "|---|---|---|---|"]
    for p in found["pairs"]:
        chance = p["probability_of_improvement"]
        lines.append(f"| {p['a']} | {p['b']} | {chance:.2f} {_ci(p['ci'])} | {p['verdict']} |")
    lines += [
        "",
        "Intervals: stratified percentile bootstrap (seeded); verdict `better`/`worse` when "
        "the 95% interval of P(A > B) lies wholly above/below 0.5 (docs/guides/"
        "comparing-runs.md).",
        "",
        "The sweep's own report (its parent run's `report/` artifacts, copied): "
        "[lm_compare_report/report.md](lm_compare_report/report.md).",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="the sweep's worker processes")
    parser.add_argument("--home", type=Path, help="a platform home where the sweep ran")
    parser.add_argument("--parent", help="that sweep's parent run id (default: the newest)")
    args = parser.parse_args()
    os.environ["HF_HUB_OFFLINE"] = "1"
    timing: dict[str, Any] = {}
    home = args.home
    if home is None:
        home = Path(tempfile.mkdtemp(prefix="lm_compare_"))
        timing = run_sweep(home, args.workers)
    scored = score(home, args.parent or sweep_parent(home))
    result = {
        "command": command_line("benchmarks.learning.lm_compare"),
        "machine": machine(),
        "load": [round(x, 2) for x in load_averages()],
        **scored,
        **({"sweep_wall_s": timing["wall_s"], "sweep_cpu_s": timing["cpu_s"]} if timing else {}),
    }
    write_results(result, "lm_compare", render)


if __name__ == "__main__":
    main()
