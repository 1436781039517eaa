"""The fixed cost of a 256-step `ppo-platform run` as a time line, beside the plain SB3 script.

Both run as whole processes, alternately (plain, platform, plain, ...), with
`PPO_PLATFORM_TRACE_TIMES=1`: every process of the run (training process, tracking process)
writes `time.perf_counter()` marks to stderr, a clock shared by all processes, so each mark is
placed relative to the moment this script started the command; "process started" comes from
/proc (10 ms resolution) and "exit" is when `wait4` returned. Then one `python -X importtime`
run of each gives the top-level packages only the platform's training process imports.

    python -m benchmarks.overhead.fixed_cost_timeline --rounds 5
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from benchmarks.harness import ROOT, alternate, command_line, run_process, write_results

STEPS = "256"
PLATFORM = [
    "run",
    "specs/cartpole.yaml",
    "--set",
    f"budget.total_timesteps={STEPS}",
    "--set",
    "evaluation.every_timesteps=0",
    "--set",
    "evaluation.episodes=1",
    "--quiet",
]
# A mark: seconds, pid, process, label, then a tab and the CPU seconds the process had used.
TRACE = re.compile(r"^trace (\S+) (\d+) (\S+) ([^\t]*)")


def commands() -> dict[str, list[str]]:
    exe = str(Path(sys.executable).with_name("ppo-platform"))
    plain = [
        sys.executable,
        str(ROOT / "benchmarks" / "overhead" / "plain_sb3_cartpole.py"),
        "--steps",
        STEPS,
    ]
    return {"plain": plain, "platform": [exe, *PLATFORM]}


def run_traced(command: list[str], env: dict[str, str]) -> dict:
    """One whole process; its marks as seconds since launch, per process role."""
    sample = run_process(command, env, keep_stderr=True)
    started, err, main_pid = sample.pop("started_at"), sample.pop("stderr"), sample.pop("pid")
    marks = [m.groups() for line in err.splitlines() if (m := TRACE.match(line))]
    roles: dict[str, str] = {}
    for _, pid, _, label in marks:
        if label.startswith("tracking:"):
            roles[pid] = "tracking"
    events = [
        (float(t) - started, "main" if int(pid) == main_pid else roles.get(pid, "child"), label)
        for t, pid, _, label in marks
    ]
    events.append((sample["wall_s"], "main", "exit (wait4 returned)"))
    return {**sample, "events": events}


def import_costs(command: list[str], env: dict[str, str]) -> dict[str, float]:
    """Cumulative import seconds of each top-level package of the command's main process."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *command[1:]]
        if command[0] == sys.executable
        else [sys.executable, "-X", "importtime", *command],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    costs: dict[str, float] = {}
    for line in done.stderr.splitlines():
        parts = line.split("|")
        if not line.startswith("import time:") or len(parts) != 3 or not parts[1].strip().isdigit():
            continue
        name = parts[2].rstrip()
        if name.startswith(" ") and not name.startswith("  "):  # a top-level import
            top = name.strip().split(".")[0]
            costs[top] = costs.get(top, 0.0) + int(parts[1]) / 1e6
    return costs


def median_range(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def timeline_table(samples: list[dict]) -> list[str]:
    by_label: dict[tuple[str, str], list[float]] = defaultdict(list)
    for sample in samples:
        seen: set[tuple[str, str]] = set()
        for at, role, label in sample["events"]:
            key = (role, re.sub(r"\d+(\.\d+)? s\b|pending \d+", "N", label))
            if key not in seen:  # the first of repeated marks (e.g. rows answered)
                seen.add(key)
                by_label[key].append(at)
    rows = sorted(by_label.items(), key=lambda item: statistics.median(item[1]))
    lines = ["| s since launch, median (min-max) | process | mark |", "|---|---|---|"]
    lines += [f"| {median_range(v)} | {role} | {label} |" for (role, label), v in rows]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default="fixed_cost_timeline")
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="ppo_timeline_")
    env = {
        **os.environ,
        "PPO_PLATFORM_HOME": home,
        "PYTHONPATH": f"{ROOT / 'platform'}:{ROOT}",
        "PPO_PLATFORM_TRACE_TIMES": "1",
    }
    tools = commands()
    # One untimed warm-up each (page cache, bytecode, MLflow database), then plain, platform, ...
    samples = alternate(
        {name: lambda _, c=command: run_traced(c, env) for name, command in tools.items()},
        args.rounds,
        order="round_robin",
    )
    untraced = {k: v for k, v in env.items() if k != "PPO_PLATFORM_TRACE_TIMES"}
    imports = {name: import_costs(command, untraced) for name, command in tools.items()}
    report = {
        "command": command_line("benchmarks.overhead.fixed_cost_timeline"),
        "date_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
        "samples": samples,
        "imports": imports,
    }
    # The .md page is written by hand around this time line: the JSON only, the markdown printed.
    write_results(report, args.out, render, markdown_file=False)


def render(report: dict) -> str:
    when = f"{report['date_utc']} UTC, `{report['uptime_after']}`"
    lines = [f"Command: `{report['command']}`, {when}"]
    for name, samples in report["samples"].items():
        loads = [s["load1_at_start"] for s in samples]
        lines += [
            "",
            f"### {name}: wall {median_range([s['wall_s'] for s in samples])} s, CPU "
            f"{median_range([s['cpu_s'] for s in samples])} s, 1-min load "
            f"{min(loads):.2f}-{max(loads):.2f}",
            "",
            *timeline_table(samples),
        ]
    plain, ours = report["imports"]["plain"], report["imports"]["platform"]
    extra = sorted(((v, k) for k, v in ours.items() if k not in plain and v >= 0.005), reverse=True)
    lines += [
        "",
        "### Top-level packages only the platform's training process imports (-X importtime, "
        "cumulative s, one run)",
        "",
        ", ".join(f"{k} {v:.3f}" for v, k in extra),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
