"""env.vectorization benchmark: env steps per second, per-env (dummy) vs native vector envs.

Three measurements, each alternating the variants (A B / B A) and reporting medians with min-max:

1. `collect`: SB3's `collect_rollouts` alone, in this process, CPU time (one thread): stock SB3
   PPO on DummyVecEnv, our PPO (lean collection) on DummyVecEnv, our PPO on the native
   CartPoleVectorEnv; specs/cartpole.yaml's shapes (8 envs x 32 steps).
2. `run`: whole `ppo-platform run specs/cartpole.yaml` processes, evaluation off
   (every_timesteps 0, episodes 1), dummy vs native; CPU (children included) and wall.
3. `throughput`: the same whole process at 64 envs x 32 steps, K 4, 4 minibatches of 512.

    python -m benchmarks.throughput.vector_envs --pairs 5 --steps 100000 --throughput-steps 1000000

Writes benchmarks/results/vector_envs.{json,md}. CPU time is the comparable number on a loaded
machine; the load is recorded with every result.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    ROOT,
    alternate,
    command_line,
    machine,
    machine_line,
    run_process,
    summarize,
    summary,
    timed,
    write_results,
)

THROUGHPUT = [
    "env.n_envs=64",
    "rollout.n_steps=32",
    "update.epochs=4",
    "update.minibatch_size=512",
]


def _collector(variant: str) -> tuple[Any, Any]:
    import gymnasium as gym
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    from ppo_platform.envs.vector import NativeVecEnv
    from ppo_platform.trainers.ppo import PlatformPPO

    if variant == "native_lean":
        env = NativeVecEnv(gym.make_vec("CartPole-v1", 8, vectorization_mode="vector_entry_point"))
    else:
        env = make_vec_env("CartPole-v1", n_envs=8, seed=0)
    env.seed(0)
    cls = PPO if variant == "dummy_stock" else PlatformPPO
    model = cls("MlpPolicy", env, n_steps=32, batch_size=256, n_epochs=20, seed=0, device="cpu")
    _, callback = model._setup_learn(10**9, callback=None)
    return model, callback


def bench_collect(pairs: int, rollouts: int) -> dict[str, Any]:
    """Env steps per CPU second of collect_rollouts, per variant."""
    import torch

    torch.set_num_threads(1)
    variants = ["dummy_stock", "dummy_lean", "native_lean"]
    models = {name: _collector(name) for name in variants}

    def collect(name: str) -> dict[str, float]:
        model, callback = models[name]

        def rollouts_() -> None:
            for _ in range(rollouts):
                model.collect_rollouts(model.env, callback, model.rollout_buffer, model.n_steps)

        return {"steps_per_cpu_s": rollouts * 256 / timed(rollouts_)["cpu_s"]}

    samples = alternate({name: lambda _, n=name: collect(n) for name in variants}, pairs)
    return {name: summary(s["steps_per_cpu_s"] for s in runs) for name, runs in samples.items()}


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
    variants = {mode: lambda _, m=mode: run_process(commands[m], env) for mode in modes}
    samples = alternate(variants, pairs, label=f"{steps} ")
    return {
        mode: {
            **summarize(values, ("cpu_s", "wall_s", "load1_at_start")),
            "steps_per_cpu_s": summary(steps / s["cpu_s"] for s in values),
            "steps_per_wall_s": summary(steps / s["wall_s"] for s in values),
        }
        for mode, values in samples.items()
    }


def _cell(stats: dict[str, float], digits: int = 0) -> str:
    return f"{stats['median']:.{digits}f} ({stats['min']:.{digits}f}-{stats['max']:.{digits}f})"


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "# env.vectorization: per-env (dummy) vs native vector envs",
        "",
        f"Command: `{result['command']}`",
        "",
        machine_line(result["machine"]),
        f"Load: before `{result['machine']['uptime_before']}`; after `{result['uptime_after']}`.",
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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--rollouts", type=int, default=100, help="per collect sample")
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--throughput-steps", type=int, default=1_000_000)
    parser.add_argument(
        "--blocks", default="collect,run,throughput", help="which measurements, comma-separated"
    )
    args = parser.parse_args()
    blocks = set(args.blocks.split(","))
    result: dict[str, Any] = {
        "command": command_line("benchmarks.throughput.vector_envs"),
        "machine": machine(),
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
    save(result)


def save(result: dict[str, Any]) -> str:
    write_results(result, "vector_envs", markdown)
    return markdown(result)


if __name__ == "__main__":
    main()
