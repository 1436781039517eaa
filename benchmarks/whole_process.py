"""Whole-process benchmark: `ppo-platform run` vs a plain SB3 script vs rl-baselines3-zoo.

Each sample is one process started from the shell, as a user pays for it: imports, MLflow,
evaluation, saves and exit included. The tools run round-robin (A B C A B C ...) so they share
the machine's noise; wall time, CPU time (user + sys) and peak RSS come from `os.wait4` on the
child (the largest single process of its tree; the same numbers `/usr/bin/time -v` prints).
Medians with min and max. All tools use specs/cartpole.yaml's values (rl-zoo's tuned CartPole
PPO), one torch thread, seed 0.

    # `make bench`, the quick set (a local check, not committed):
    python benchmarks/whole_process.py --steps 256 20000 --pairs 3 --out whole_process_quick
    # the full set (results/whole_process.md):
    python benchmarks/whole_process.py --steps 256 20000 100000 --pairs 5

rl-baselines3-zoo runs only from its own venv (benchmarks/.venv-zoo, `make bench-zoo-venv`);
without it that column is skipped and the results say so.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ZOO_PYTHON = ROOT / "benchmarks" / ".venv-zoo" / "bin" / "python"
RESULTS = ROOT / "benchmarks" / "results"
EVAL_OFF = ["--set", "evaluation.every_timesteps=0", "--set", "evaluation.episodes=1"]


@dataclass
class Tool:
    name: str
    description: str
    command: list[str]
    samples: list[dict[str, float]] = field(default_factory=list)


def platform_command(steps: int, evaluation_off: bool) -> list[str]:
    exe = Path(sys.executable).with_name("ppo-platform")
    args = [str(exe), "run", "specs/cartpole.yaml", "--set", f"budget.total_timesteps={steps}"]
    return args + (EVAL_OFF if evaluation_off else []) + ["--quiet"]


def zoo_command(steps: int, evaluation_off: bool, log_folder: Path) -> list[str]:
    args = [str(ZOO_PYTHON), "-m", "rl_zoo3.train", "--algo", "ppo", "--env", "CartPole-v1"]
    args += ["-n", str(steps), "--seed", "0", "--num-threads", "1", "--verbose", "0"]
    args += ["--log-folder", str(log_folder)]
    return args + (["--eval-freq", "-1"] if evaluation_off else [])


def tools_for(steps: int, with_zoo: bool, scratch: Path) -> list[Tool]:
    plain = [sys.executable, str(ROOT / "benchmarks" / "plain_sb3_cartpole.py")]
    tools = [
        Tool(
            "plain_sb3", "plain SB3 script (no eval, no logging)", [*plain, "--steps", str(steps)]
        ),
        Tool(
            "platform_eval_off",
            "ppo-platform run, evaluation.every_timesteps=0, episodes=1",
            platform_command(steps, evaluation_off=True),
        ),
        Tool(
            "platform_default",
            "ppo-platform run, default evaluation (every 10k, 10 episodes)",
            platform_command(steps, evaluation_off=False),
        ),
    ]
    if with_zoo:
        tools += [
            Tool(
                "zoo_eval_off",
                "python -m rl_zoo3.train --eval-freq -1",
                zoo_command(steps, True, scratch / "zoo"),
            ),
            Tool(
                "zoo_default",
                "python -m rl_zoo3.train, default eval (every 25k, 5 episodes)",
                zoo_command(steps, False, scratch / "zoo"),
            ),
        ]
    return tools


def run_once(command: list[str], env: dict[str, str]) -> dict[str, float]:
    """One whole process: wall, CPU (user + sys, children included) and peak RSS in MiB."""
    load = os.getloadavg()[0]
    started = time.perf_counter()
    proc = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    assert proc.stderr is not None
    errors = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(command)} exited {proc.returncode}:\n{errors.decode()[-2000:]}")
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mib": usage.ru_maxrss / 1024,
        "load1_at_start": load,
    }


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def bench_steps(steps: int, pairs: int, with_zoo: bool, env: dict[str, str]) -> dict:
    scratch = Path(env["PPO_PLATFORM_HOME"])
    tools = tools_for(steps, with_zoo, scratch)
    for tool in tools:  # warm-up, untimed: page cache, MLflow database, bytecode
        run_once(tool.command, env)
    for pair in range(pairs):
        for tool in tools:
            tool.samples.append(run_once(tool.command, env))
            print(
                f"  {steps:>6} steps pair {pair + 1}: {tool.name:18} "
                f"{tool.samples[-1]['wall_s']:6.2f} s",
                flush=True,
            )
    result: dict = {"env_steps": steps, "pairs": pairs, "tools": {}}
    for tool in tools:
        result["tools"][tool.name] = {
            "description": tool.description,
            "command": " ".join(tool.command)
            .replace(str(ROOT) + "/", "")
            .replace(str(Path(sys.executable).parent) + "/", "")
            .replace(str(scratch), "$TMP"),
            "samples": tool.samples,
            **{
                key: summary([s[key] for s in tool.samples])
                for key in ("wall_s", "cpu_s", "peak_rss_mib")
            },
        }
    plain = result["tools"]["plain_sb3"]
    for tool in result["tools"].values():
        tool["wall_vs_plain"] = tool["wall_s"]["median"] / plain["wall_s"]["median"]
        tool["cpu_vs_plain"] = tool["cpu_s"]["median"] / plain["cpu_s"]["median"]
        tool["wall_minus_plain_s"] = tool["wall_s"]["median"] - plain["wall_s"]["median"]
    return result


def package_versions(python: Path | str, names: list[str]) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json, sys\n"
        "out = {}\n"
        "for n in sys.argv[1:]:\n"
        "    try: out[n] = m.version(n)\n"
        "    except m.PackageNotFoundError: out[n] = 'not installed'\n"
        "print(json.dumps(out))"
    )
    done = subprocess.run([str(python), "-c", code, *names], capture_output=True, text=True)
    return json.loads(done.stdout) if done.returncode == 0 else {}


def machine() -> dict:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    mem_kib = int(Path("/proc/meminfo").read_text().split()[1])
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip() or os.environ.get("BENCH_COMMIT", "unknown (not a git checkout)")
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(mem_kib / 2**20, 1),
        "os": platform.platform(),
        "python": platform.python_version(),
        "git_commit": commit,
        "date_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
        "uptime_before": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
    }


def cell(stats: dict[str, float], digits: int = 2) -> str:
    return f"{stats['median']:.{digits}f} ({stats['min']:.{digits}f}-{stats['max']:.{digits}f})"


def header(title: str, report: dict) -> list[str]:
    """Title, command, machine and versions: the first lines of a whole-process result."""
    m = report["machine"]
    return [
        f"# {title}",
        "",
        f"Command: `{report['command']}`",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, {m['os']}, "
        f"Python {m['python']}, commit {m['git_commit']}, {m['date_utc']} UTC.",
        f"Versions: {', '.join(f'{k} {v}' for k, v in report['versions'].items())}.",
    ]


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
        "command": shlex.join(["python", "benchmarks/whole_process.py", *sys.argv[1:]]),
        "note": args.note,
        "machine": machine(),
        "versions": package_versions(
            sys.executable, ["torch", "stable_baselines3", "gymnasium", "mlflow"]
        ),
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


def write_results(report: dict, stem: str, render: Callable[[dict], str]) -> None:
    """The load after the run, then results/<stem>.json and .md (printed too)."""
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    report["uptime_after"] = uptime
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{stem}.json").write_text(json.dumps(report, indent=2) + "\n")
    (RESULTS / f"{stem}.md").write_text(render(report))
    print(render(report))


if __name__ == "__main__":
    main()
