"""Whole-process benchmark: `ppo-platform run` vs a plain SB3 script vs rl-baselines3-zoo.

Each sample is one process started from the shell, as a user pays for it: imports, MLflow,
evaluation, saves and exit included. The tools run round-robin (A B C A B C ...) so they share
the machine's noise; wall time, CPU time (user + sys) and peak RSS come from `os.wait4` on the
child (the largest single process of its tree; the same numbers `/usr/bin/time -v` prints).
Medians with min and max. All tools use specs/cartpole.yaml's values (rl-zoo's tuned CartPole
PPO), one torch thread, seed 0.

    # `make bench`, the quick set (a local check, not committed):
    python -m benchmarks.overhead.whole_process --steps 256 20000 --pairs 3 \
        --out whole_process_quick
    # the full set (results/whole_process.md):
    python -m benchmarks.overhead.whole_process --steps 256 20000 100000 --pairs 5

rl-baselines3-zoo runs only from its own venv (benchmarks/.venv-zoo, `make bench-zoo-venv`);
without it that column is skipped and the results say so.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

from benchmarks.harness import (
    ROOT,
    alternate,
    cell,
    command_line,
    header,
    machine,
    package_versions,
    run_process,
    summarize,
    versions,
    write_results,
)

ZOO_PYTHON = ROOT / "benchmarks" / ".venv-zoo" / "bin" / "python"
PLAIN_SCRIPT = ROOT / "benchmarks" / "overhead" / "plain_sb3_cartpole.py"
EVAL_OFF = ["--set", "evaluation.every_timesteps=0", "--set", "evaluation.episodes=1"]


def platform_command(steps: int, evaluation_off: bool) -> list[str]:
    exe = Path(sys.executable).with_name("ppo-platform")
    args = [str(exe), "run", "specs/cartpole.yaml", "--set", f"budget.total_timesteps={steps}"]
    return args + (EVAL_OFF if evaluation_off else []) + ["--quiet"]


def zoo_command(steps: int, evaluation_off: bool, log_folder: Path) -> list[str]:
    args = [str(ZOO_PYTHON), "-m", "rl_zoo3.train", "--algo", "ppo", "--env", "CartPole-v1"]
    args += ["-n", str(steps), "--seed", "0", "--num-threads", "1", "--verbose", "0"]
    args += ["--log-folder", str(log_folder)]
    return args + (["--eval-freq", "-1"] if evaluation_off else [])


def tools_for(steps: int, with_zoo: bool, scratch: Path) -> dict[str, tuple[str, list[str]]]:
    """Each tool's name -> (description, command)."""
    plain = [sys.executable, str(PLAIN_SCRIPT), "--steps", str(steps)]
    tools = {
        "plain_sb3": ("plain SB3 script (no eval, no logging)", plain),
        "platform_eval_off": (
            "ppo-platform run, evaluation.every_timesteps=0, episodes=1",
            platform_command(steps, evaluation_off=True),
        ),
        "platform_default": (
            "ppo-platform run, default evaluation (every 10k, 10 episodes)",
            platform_command(steps, evaluation_off=False),
        ),
    }
    if with_zoo:
        tools["zoo_eval_off"] = (
            "python -m rl_zoo3.train --eval-freq -1",
            zoo_command(steps, True, scratch / "zoo"),
        )
        tools["zoo_default"] = (
            "python -m rl_zoo3.train, default eval (every 25k, 5 episodes)",
            zoo_command(steps, False, scratch / "zoo"),
        )
    return tools


def bench_steps(steps: int, pairs: int, with_zoo: bool, env: dict[str, str]) -> dict:
    """Every tool `pairs` times round-robin (after one untimed warm-up each: page cache, MLflow
    database, bytecode); medians and ratios over the plain script's."""
    scratch = Path(env["PPO_PLATFORM_HOME"])
    tools = tools_for(steps, with_zoo, scratch)
    samples = alternate(
        {name: lambda _, c=command: run_process(c, env) for name, (_, command) in tools.items()},
        pairs,
        order="round_robin",
        label=f"{steps:>6} steps ",
    )
    result: dict = {"env_steps": steps, "pairs": pairs, "tools": {}}
    for name, (description, command) in tools.items():
        result["tools"][name] = {
            "description": description,
            "command": " ".join(command)
            .replace(str(ROOT) + "/", "")
            .replace(str(Path(sys.executable).parent) + "/", "")
            .replace(str(scratch), "$TMP"),
            "samples": samples[name],
            **summarize(samples[name], ("wall_s", "cpu_s", "peak_rss_mib")),
        }
    plain = result["tools"]["plain_sb3"]
    for tool in result["tools"].values():
        tool["wall_vs_plain"] = tool["wall_s"]["median"] / plain["wall_s"]["median"]
        tool["cpu_vs_plain"] = tool["cpu_s"]["median"] / plain["cpu_s"]["median"]
        tool["wall_minus_plain_s"] = tool["wall_s"]["median"] - plain["wall_s"]["median"]
    return result


def markdown(report: dict) -> str:
    m = report["machine"]
    title = "Whole-process benchmark: ppo-platform run vs plain SB3 vs rl-baselines3-zoo"
    lines = [
        *header(title, report),
        f"Load: before `{m['uptime_before']}`; after `{report['uptime_after']}`; 1-min load at "
        f"the start of each timed sample {report['load1_min']:.2f}-{report['load1_max']:.2f}.",
        "",
    ]
    if report.get("note"):
        lines += [f"**{report['note']}**", ""]
    if report["zoo"] != "measured":
        lines += [f"rl-baselines3-zoo: {report['zoo']}", ""]
    lines += [
        "Medians (min-max) of whole processes, tools run round-robin; wall and CPU in seconds, "
        "peak RSS of the largest process in MiB; ratios are medians over the plain script's.",
        "",
        "| env steps | tool | wall s | CPU s | peak RSS MiB | wall / plain | CPU / plain | "
        "wall - plain s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for case in report["cases"]:
        for name, t in case["tools"].items():
            lines.append(
                f"| {case['env_steps']} | {name} | {cell(t['wall_s'])} | {cell(t['cpu_s'])} | "
                f"{cell(t['peak_rss_mib'], 0)} | {t['wall_vs_plain']:.2f}x | "
                f"{t['cpu_vs_plain']:.2f}x | {t['wall_minus_plain_s']:+.2f} |"
            )
    lines += ["", "Tools:", ""]
    for name, t in report["cases"][0]["tools"].items():
        lines.append(f"- `{name}`: {t['description']}: `{t['command']}`")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[256, 20_000])
    parser.add_argument("--pairs", type=int, default=3, help="timed rounds per tool")
    parser.add_argument("--no-zoo", action="store_true", help="skip rl-baselines3-zoo")
    parser.add_argument("--out", default="whole_process", help="results file stem")
    parser.add_argument("--note", default="", help="printed in bold in the markdown")
    args = parser.parse_args()
    with_zoo = not args.no_zoo and ZOO_PYTHON.exists()
    zoo = (
        "measured"
        if with_zoo
        else (
            "skipped (--no-zoo)"
            if args.no_zoo
            else f"skipped: {ZOO_PYTHON.relative_to(ROOT)} missing (make bench-zoo-venv)"
        )
    )
    home = Path(tempfile.mkdtemp(prefix="ppo_whole_process_"))
    env = {
        **os.environ,
        "PPO_PLATFORM_HOME": str(home),
        "PYTHONPATH": f"{ROOT / 'platform'}:{ROOT}",
    }
    report: dict = {
        "command": command_line("benchmarks.overhead.whole_process"),
        "note": args.note,
        "machine": machine(),
        "versions": versions(),
        "zoo": zoo,
        "cases": [],
    }
    if with_zoo:
        report["versions"]["rl_zoo3 (own venv)"] = package_versions(ZOO_PYTHON, ["rl_zoo3"]).get(
            "rl_zoo3", "?"
        )
    try:
        for steps in args.steps:
            report["cases"].append(bench_steps(steps, args.pairs, with_zoo, env))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    loads = [
        s["load1_at_start"]
        for c in report["cases"]
        for t in c["tools"].values()
        for s in t["samples"]
    ]
    report["load1_min"], report["load1_max"] = min(loads), max(loads)
    write_results(report, args.out, markdown)


if __name__ == "__main__":
    main()
