"""A tuning study's winner on fresh seeds: does the summary's predicted solve rate hold?

Runs the study's best_spec.yaml on seeds the study never used (neither searched nor held out),
each as a separate `ppo-platform run` process in its own fresh platform home, with 20
evaluation episodes; a seed solves when its final eval return reaches the threshold (475 for
CartPole-v1). Compares the count with the solve rate the study's summary.json predicted (its
chosen trial's held-out solve rate and exact 95% interval: docs/guides/tuning.md) and writes
benchmarks/results/<stem>.{json,md} with the commands and every seed's return.

    ppo-platform tune specs/tune_cartpole.yaml --workers 2 --out outputs/tune-cartpole
    python -m benchmarks.learning.tune_fresh_seeds --study-dir outputs/tune-cartpole \
        --study-spec specs/tune_cartpole.yaml --parallel 2
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.harness import command_line, load1, machine, measured, write_results

FINAL = re.compile(r"final eval return (-?[0-9.]+) \+- ([0-9.]+)")
STEM = "tune_cartpole_fresh_seeds"


def used_seeds(study_spec: Path) -> set[int]:
    """Every seed the study trains on: the searched ones and the held-out ones."""
    from ppo_platform.spec.workloads import load_any_spec_text

    spec = load_any_spec_text(study_spec.read_text(), str(study_spec), from_outside=False)
    assert spec.tune is not None
    first = spec.budget.seed
    searched = set(range(first, first + spec.tune.seeds_max))
    return searched | set(spec.tune.verify.seeds if spec.tune.verify else [])


def run_seed(spec: Path, seed: int, episodes: int) -> tuple[list[str], subprocess.Popen[str]]:
    """One fresh-seed run in its own process and platform home."""
    home = tempfile.mkdtemp(prefix=f"fresh_seed_{seed}_")
    env = {**os.environ, "PPO_PLATFORM_HOME": home, "OMP_NUM_THREADS": "1"}
    command = [
        str(Path(sys.executable).parent / "ppo-platform"), "run", str(spec), "--quiet",
        "--set", f"budget.seed={seed}", "--set", f"evaluation.episodes={episodes}",
    ]  # fmt: skip
    process = subprocess.Popen(command, env=env, text=True, stdout=subprocess.PIPE)
    return command, process


def run_all(spec: Path, seeds: list[int], episodes: int, parallel: int) -> list[dict[str, Any]]:
    """Every seed's final eval return (`parallel` processes at a time)."""
    rows = []
    for start in range(0, len(seeds), parallel):
        batch = {s: run_seed(spec, s, episodes) for s in seeds[start : start + parallel]}
        for seed, (command, process) in batch.items():
            output = process.communicate()[0]
            found = FINAL.search(output)
            if process.returncode != 0 or found is None:
                raise SystemExit(f"seed {seed}: exit {process.returncode}\n{output[-2000:]}")
            rows.append(
                {
                    "seed": seed,
                    "command": " ".join(command[1:]),
                    "final_eval_return": float(found.group(1)),
                    "final_eval_std": float(found.group(2)),
                }
            )
    return rows


def predicted(summary: dict[str, Any]) -> dict[str, Any]:
    """The chosen trial's held-out solve rate, as the study's summary.json states it."""
    chosen = next(
        (v for v in summary.get("verification") or [] if v["number"] == summary["best_trial"]),
        None,
    )
    if chosen is None or not chosen.get("solved"):
        raise SystemExit(
            "the study's summary.json has no held-out solve rate for its chosen trial: "
            "run a study with tune.verify.solve_threshold (specs/tune_cartpole.yaml has it)."
        )
    return {"trial": chosen["number"], "threshold": chosen["solve_threshold"], **chosen["solved"]}


def main() -> None:
    from ppo_platform.reports.statistics import solve_rate

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study-dir", type=Path, default=Path("outputs/tune-tune-cartpole"))
    parser.add_argument("--study-spec", type=Path, default=Path("specs/tune_cartpole.yaml"))
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(1000, 1020)))
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--parallel", type=int, default=2, help="Runs at once (2 cores: 2).")
    parser.add_argument("--stem", default=STEM)
    parser.add_argument("--study-note", default="", help="How the study ran (wall, load).")
    args = parser.parse_args()
    reused = sorted(set(args.seeds) & used_seeds(args.study_spec))
    if reused:
        raise SystemExit(f"--seeds {reused}: the study used these; pass seeds it never saw.")
    summary = json.loads((args.study_dir / "summary.json").read_text())
    claim = predicted(summary)
    rows, timing = measured(
        lambda: run_all(args.study_dir / "best_spec.yaml", args.seeds, args.episodes, args.parallel)
    )
    solved = sum(r["final_eval_return"] >= claim["threshold"] for r in rows)
    fresh = solve_rate(solved, len(rows))
    low, high = claim["ci95"]
    result = {
        "command": command_line("benchmarks.learning.tune_fresh_seeds"),
        "machine": machine(),
        "study": summary["study"],
        "study_command": f"ppo-platform tune {args.study_spec} --workers 2 --out {args.study_dir}",
        "study_note": args.study_note,
        "predicted": claim,
        "rows": rows,
        "solved": solved,
        "runs": len(rows),
        "fresh_ci95": list(fresh.ci),
        "inside_predicted": low <= fresh.rate <= high,
        "wall_seconds": timing["wall_s"],
        "load1": load1(),
    }
    write_results(result, args.stem, render)


def render(result: dict[str, Any]) -> str:
    claim = result["predicted"]
    low, high = claim["ci95"]
    rate = result["solved"] / result["runs"]
    lines = [
        f"# Study `{result['study']}`: its winner on {result['runs']} fresh seeds",
        "",
        f"Command: `{result['command']}` (wall {result['wall_seconds']:.0f} s, load average "
        f"{result['load1']:.1f} at the end). Each seed: a separate process, "
        "`ppo-platform run best_spec.yaml --set budget.seed=S --set evaluation.episodes=20`.",
        "",
        f"Study: `{result['study_command']}`. {result['study_note']}",
        "",
        f"The summary predicted (trial {claim['trial']}, {claim['solved']}/{claim['runs']} "
        f"held-out seeds at >= {claim['threshold']:g}): solve rate **{claim['rate']:.0%}, 95% CI "
        f"{low:.0%}-{high:.0%}**.",
        f"Fresh seeds: **{result['solved']}/{result['runs']} solved ({rate:.0%})**, "
        f"{'inside' if result['inside_predicted'] else 'OUTSIDE'} the predicted interval.",
        "",
        "| seed | final eval return (20 episodes) | solved |",
        "|---|---|---|",
    ]
    for r in result["rows"]:
        solved = "yes" if r["final_eval_return"] >= claim["threshold"] else "no"
        lines.append(
            f"| {r['seed']} | {r['final_eval_return']:.2f} +- {r['final_eval_std']:.2f} | "
            f"{solved} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
