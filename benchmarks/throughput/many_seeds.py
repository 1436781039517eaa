"""What N seeds cost: the compiled path's `run SPEC --seeds` (every seed in one process) against
one seed on it, one seed on the torch path and CleanRL's ppo.py, whole processes, alternating.

Every variant is a whole process from the shell, one thread each (OMP_NUM_THREADS=1,
MKL_NUM_THREADS=1, one XLA thread; the compiled batch trains its seeds in one group per core,
each on its own thread, and once more with PPO_PLATFORM_COMPILED_THREADS=1), in rotating
order (A B C D, B C D A, ...), evaluation off but the final one, on specs/cartpole.yaml's
hyperparameters (CleanRL: the same flags as cleanrl_ab.py's cartpole row, from its own venv,
`make bench-cleanrl-venv`):

- `torch, 1 seed`: `ppo-platform run specs/cartpole.yaml`
- `compiled, 1 seed`: the same with `--set compiled=on`
- `compiled, N seeds`: `ppo-platform run specs/cartpole.yaml --seeds 0-(N-1) --set compiled=on`
- `CleanRL, 1 seed`: `ppo.py --env-id CartPole-v1 ...`

N seeds one after another on torch or on CleanRL cost N times one seed; the report says so as a
computed figure (N x the measured median), not a measured one. Results go to
benchmarks/results/many_seeds.{md,json}.

    python -m benchmarks.throughput.many_seeds                      # 100k steps, 16 seeds, 3 rounds
    python -m benchmarks.throughput.many_seeds --steps 20000 --seeds 4 --rounds 1 --out quick
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import statistics
import sys
import tempfile
from collections.abc import Callable
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
from benchmarks.throughput.cleanrl_ab import CARTPOLE_FLAGS, CLEANRL_DIR, CLEANRL_PYTHON

SPEC = str(ROOT / "specs" / "cartpole.yaml")
EVAL_OFF = ["evaluation.every_timesteps=0", "evaluation.episodes=1"]
Command = Callable[[int], list[str]]


def platform(steps: int, *extra: str, seeds: str | None = None, threads: int = 0) -> Command:
    """`threads`: the batch's PPO_PLATFORM_COMPILED_THREADS (0: the default, one per core)."""
    exe = str(Path(sys.executable).with_name("ppo-platform"))
    prefix = ["env", f"PPO_PLATFORM_COMPILED_THREADS={threads}"] if threads else []

    def command(seed: int) -> list[str]:
        sets = [*EVAL_OFF, f"budget.total_timesteps={steps}", *extra]
        sets += [] if seeds else [f"budget.seed={seed}"]
        chosen = ["--seeds", seeds] if seeds else []
        sets_args = (a for s in sets for a in ("--set", s))
        return [*prefix, exe, "run", SPEC, *chosen, *sets_args, "--quiet"]

    return command


def cleanrl(steps: int) -> Command:
    def command(seed: int) -> list[str]:
        flags = [*CARTPOLE_FLAGS, "--total-timesteps", str(steps), "--seed", str(seed)]
        return [str(CLEANRL_PYTHON), str(CLEANRL_DIR / "ppo.py"), *flags, "--no-cuda"]

    return command


def variants(steps: int, seeds: int) -> dict[str, tuple[Command, int]]:
    """Each variant's command and how many seeds one process of it trains."""
    return {
        "torch, 1 seed": (platform(steps), 1),
        "compiled, 1 seed": (platform(steps, "compiled=on"), 1),
        f"compiled, {seeds} seeds": (platform(steps, "compiled=on", seeds=f"0-{seeds - 1}"), seeds),
        f"compiled, {seeds} seeds, 1 thread": (
            platform(steps, "compiled=on", seeds=f"0-{seeds - 1}", threads=1),
            seeds,
        ),
        "CleanRL, 1 seed": (cleanrl(steps), 1),
    }


def returns(stdout: str) -> list[float]:
    """The platform's final evaluation returns (one per seed), or CleanRL's last 10 episodes'
    mean."""
    found = [float(x) for x in re.findall(r"final eval return ([-\d.]+)", stdout)]
    if found:
        return found
    episodes = [float(x) for x in re.findall(r"episodic_return=\[?([-\d.e]+)", stdout)]
    return [statistics.mean(episodes[-10:])] if episodes else []


def measure(steps: int, seeds: int, rounds: int, warmup: bool) -> dict:
    home = Path(tempfile.mkdtemp(prefix="many_seeds_"))
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PPO_PLATFORM_HOME": str(home),
        "PYTHONPATH": f"{ROOT / 'platform'}:{ROOT}",
    }
    table = variants(steps, seeds)

    def variant(make: Command) -> Callable[[int], dict]:
        def one(index: int) -> dict:
            sample = run_process(make(index), env, home, keep_stdout=True)
            return {**sample, "returns": returns(sample.pop("stdout")), "seed": index}

        return one

    samples = alternate(
        {name: variant(make) for name, (make, _) in table.items()},
        rounds,
        warmup=warmup,
        order="rotate",
    )
    rows = []
    for name, runs in samples.items():
        make, trained = table[name]
        row = {"variant": name, "seeds_per_process": trained, "samples": runs}
        row.update(summarize(runs, ("wall_s", "cpu_s")))
        row["command"] = shlex.join(make(0)).replace(str(ROOT) + "/", "")
        rows.append(row)
    return {"steps": steps, "seeds": seeds, "rows": rows}


def _per_n_seeds(row: dict, seeds: int) -> str:
    """The wall time of N seeds: measured for a process that trains them all, else N x one."""
    median = row["wall_s"]["median"]
    if row["seeds_per_process"] == seeds:
        return f"{median:.1f} (measured)"
    return f"{seeds * median:.0f} ({seeds} x {median:.1f}, computed)"


def markdown(report: dict) -> str:
    m, result = report["machine"], report["result"]
    seeds = result["seeds"]
    one = {r["variant"]: r["wall_s"]["median"] for r in result["rows"]}
    batch = one[f"compiled, {seeds} seeds"]
    lines = [
        *header(f"What {seeds} seeds cost: the compiled path's batch against one seed", report),
        f"Load: before `{m['uptime_before']}`; after `{report['uptime_after']}`.",
        "",
        f"CartPole-v1, {result['steps']} env steps per seed, specs/cartpole.yaml's "
        "hyperparameters, evaluation off but the final one. Medians (min-max) of whole "
        "processes in rotating order, one thread each (the compiled batch: one group of seeds "
        "per core, each on its own thread, unless it says 1 thread); wall and CPU (user + sys) "
        "in seconds.",
        "",
        f"| variant | seeds per process | wall | CPU | {seeds} seeds, wall | final returns "
        "(all samples) | load during |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        loads = [s["load1_at_start"] for s in r["samples"]]
        scores = [x for s in r["samples"] for x in s["returns"]]
        shown = f"{statistics.median(scores):.1f} median of {len(scores)}" if scores else "none"
        lines.append(
            f"| {r['variant']} | {r['seeds_per_process']} | {cell(r['wall_s'], 1)} | "
            f"{cell(r['cpu_s'], 1)} | {_per_n_seeds(r, seeds)} | {shown} | "
            f"{min(loads):.1f}-{max(loads):.1f} |"
        )
    lines += [
        "",
        f"{seeds} seeds in one compiled process cost {batch / one['compiled, 1 seed']:.1f}x "
        f"one compiled seed's process, {batch / one['torch, 1 seed']:.1f}x one torch seed's "
        f"and {batch / (seeds * one['CleanRL, 1 seed']):.2f}x {seeds} CleanRL processes one "
        "after another (computed from its one-seed median).",
        "",
        "Commands (the first sample's seed):",
        "",
        *(f"- {r['variant']}: `{r['command']}`" for r in result["rows"]),
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000, help="env steps per seed")
    parser.add_argument("--seeds", type=int, default=16, help="seeds of the batch (N)")
    parser.add_argument("--rounds", type=int, default=3, help="samples of each variant")
    parser.add_argument("--no-warmup", action="store_true", help="skip the untimed first runs")
    parser.add_argument("--out", default="many_seeds", help="results file stem")
    args = parser.parse_args()
    if args.steps < 1 or args.seeds < 2 or args.rounds < 1:
        sys.exit("--steps and --rounds must be at least 1 and --seeds at least 2")
    if not CLEANRL_PYTHON.exists() or not (CLEANRL_DIR / "ppo.py").exists():
        sys.exit("CleanRL is not set up: run `make bench-cleanrl-venv`")
    report: dict = {
        "command": command_line("benchmarks.throughput.many_seeds"),
        "machine": machine(),
        "versions": versions("torch", "stable_baselines3", "gymnasium", "jax", "jaxlib"),
    }
    theirs = package_versions(CLEANRL_PYTHON, ["torch", "gymnasium", "tyro"])
    report["versions"].update({f"{k} (CleanRL venv)": v for k, v in theirs.items()})
    report["result"] = measure(args.steps, args.seeds, args.rounds, not args.no_warmup)
    write_results(report, args.out, markdown)


if __name__ == "__main__":
    main()
