"""env.vectorization benchmark: env steps per second, per-env (dummy) vs native vector envs.

Three measurements, each alternating the variants (A B / B A) and reporting medians with min-max:

1. `collect`: SB3's `collect_rollouts` alone, in this process, CPU time (one thread): stock SB3
   PPO on DummyVecEnv, our PPO (lean collection) on DummyVecEnv, our PPO on the native
   CartPoleVectorEnv; specs/cartpole.yaml's shapes (8 envs x 32 steps).
2. `run`: whole `ppo-platform run specs/cartpole.yaml` processes, evaluation off
   (every_timesteps 0, episodes 1), dummy vs native; CPU (children included) and wall.
3. `throughput`: the same whole process at 64 envs x 32 steps, K 4, 4 minibatches of 512.

    python benchmarks/vector_envs.py --pairs 5 --steps 100000 --throughput-steps 1000000

Writes benchmarks/results/vector_envs.{json,md}. CPU time is the comparable number on a loaded
machine; the load is recorded with every result.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from whole_process import run_once  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
THROUGHPUT = [
    "env.n_envs=64",
    "rollout.n_steps=32",
    "update.epochs=4",
    "update.minibatch_size=512",
]


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def _collector(variant: str) -> tuple[Any, Any]:
    import gymnasium as gym
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    from trainers.ppo import MonitoredPPO
    from trainers.vector import NativeVecEnv

    if variant == "native_lean":
        env = NativeVecEnv(gym.make_vec("CartPole-v1", 8, vectorization_mode="vector_entry_point"))
    else:
        env = make_vec_env("CartPole-v1", n_envs=8, seed=0)
    env.seed(0)
    cls = PPO if variant == "dummy_stock" else MonitoredPPO
    model = cls("MlpPolicy", env, n_steps=32, batch_size=256, n_epochs=20, seed=0, device="cpu")
    _, callback = model._setup_learn(10**9, callback=None)
    return model, callback


def bench_collect(pairs: int, rollouts: int) -> dict[str, Any]:
    """Env steps per CPU second of collect_rollouts, per variant."""
    import torch

    torch.set_num_threads(1)
    variants = ["dummy_stock", "dummy_lean", "native_lean"]
    models = {name: _collector(name) for name in variants}
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for pair in range(pairs + 1):  # the first round warms up, untimed
        for name in variants if pair % 2 == 0 else reversed(variants):
            model, callback = models[name]
            started = time.process_time()
            for _ in range(rollouts):
                model.collect_rollouts(model.env, callback, model.rollout_buffer, model.n_steps)
            rate = rollouts * 256 / (time.process_time() - started)
            if pair:
                samples[name].append(rate)
    return {name: summary(values) for name, values in samples.items()}


def _run_command(spec: Path, steps: int, mode: str, extra: list[str]) -> list[str]:
    sets = [
        f"budget.total_timesteps={steps}",
        "evaluation.every_timesteps=0",
        "evaluation.episodes=1",
        f"env.vectorization={mode}",
        *extra,
    ]
    command = [sys.executable, "-m", "ppo_platform.cli", "run", str(spec), "--quiet"]
    for item in sets:
        command += ["--set", item]
    return command


def bench_runs(steps: int, pairs: int, extra: list[str]) -> dict[str, Any]:
    """Whole processes, dummy vs native: env steps per CPU second and per wall second."""
    env = {
        **os.environ,
        "PPO_PLATFORM_HOME": tempfile.mkdtemp(prefix="vector_envs_"),
        "OMP_NUM_THREADS": "1",
    }
    modes = ["dummy", "native"]
    commands = {m: _run_command(ROOT / "specs" / "cartpole.yaml", steps, m, extra) for m in modes}
    for mode in modes:  # warm-up, untimed
        run_once(commands[mode], env)
    samples: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
    for pair in range(pairs):
        for mode in modes if pair % 2 == 0 else reversed(modes):
            sample = run_once(commands[mode], env)
            samples[mode].append(sample)
            print(f"  {steps} {mode:6} cpu {sample['cpu_s']:6.2f} s wall {sample['wall_s']:6.2f} s")
    return {
        mode: {
            "cpu_s": summary([s["cpu_s"] for s in values]),
            "wall_s": summary([s["wall_s"] for s in values]),
            "steps_per_cpu_s": summary([steps / s["cpu_s"] for s in values]),
            "steps_per_wall_s": summary([steps / s["wall_s"] for s in values]),
            "load1_at_start": summary([s["load1_at_start"] for s in values]),
        }
        for mode, values in samples.items()
    }


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def _cell(stats: dict[str, float], digits: int = 0) -> str:
    return f"{stats['median']:.{digits}f} ({stats['min']:.{digits}f}-{stats['max']:.{digits}f})"


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "# env.vectorization: per-env (dummy) vs native vector envs",
        "",
        f"Command: `{result['command']}`",
        "",
        f"Machine: {result['machine']}; commit {result['commit']}; {result['date']}.",
        f"Load: before `{result['load_before']}`; after `{result['load_after']}`.",
        "",
        "## collect_rollouts alone (CartPole-v1, 8 envs x 32 steps), env steps per CPU second",
        "",
        "| variant | env steps / CPU s |",
        "|---|---|",
    ]
    collect = result.get("collect", {})
    lines += [f"| {name} | {_cell(stats)} |" for name, stats in collect.items()]
    for key, title in (("run", "specs/cartpole.yaml"), ("throughput", "64 envs x 32, K 4, 4 mb")):
        block = result.get(key)
        if block is None:
            lines += ["", f"## whole `ppo-platform run`, {title}: not measured in this run"]
            continue
        lines += [
            "",
            f"## whole `ppo-platform run`, {title}, {block['steps']} env steps, evaluation off",
            "",
            "| vectorization | CPU s | wall s | env steps / CPU s | env steps / wall s |",
            "|---|---|---|---|---|",
        ]
        for mode, stats in block["modes"].items():
            lines.append(
                f"| {mode} | {_cell(stats['cpu_s'], 2)} | {_cell(stats['wall_s'], 2)} | "
                f"{_cell(stats['steps_per_cpu_s'])} | {_cell(stats['steps_per_wall_s'])} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--rollouts", type=int, default=100, help="per collect sample")
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--throughput-steps", type=int, default=1_000_000)
    parser.add_argument(
        "--blocks", default="collect,run,throughput", help="which measurements, comma-separated"
    )
    args = parser.parse_args()
    blocks = set(args.blocks.split(","))
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    result: dict[str, Any] = {
        "command": "python benchmarks/vector_envs.py " + " ".join(sys.argv[1:]),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
        "commit": commit,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_before": _uptime(),
    }
    if "collect" in blocks:
        result["collect"] = bench_collect(args.pairs, args.rollouts)
        print(json.dumps(result["collect"], indent=1), flush=True)
        save(result)  # after each block: a cut-short run keeps what it measured
    if "run" in blocks:
        result["run"] = {"steps": args.steps, "modes": bench_runs(args.steps, args.pairs, [])}
        save(result)
    if "throughput" in blocks:
        result["throughput"] = {
            "steps": args.throughput_steps,
            "modes": bench_runs(args.throughput_steps, args.pairs, THROUGHPUT),
        }
    print(save(result))


def save(result: dict[str, Any]) -> str:
    result["load_after"] = _uptime()
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "vector_envs.json").write_text(json.dumps(result, indent=1) + "\n")
    text = markdown(result)
    (RESULTS / "vector_envs.md").write_text(text)
    return text


if __name__ == "__main__":
    main()
