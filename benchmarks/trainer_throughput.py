"""Throughput of our PPO update against stock stable-baselines3 PPO on the same spec.

Both trainers get the same hyperparameters (the spec through
`ppo_platform.training.algorithms.ppo_kwargs`), the same seed, the same environments and one
torch thread; repetitions alternate their order so that machine noise hits both alike.
Reported: median wall time of `learn()` and of the time spent inside `train()` (the update
itself), and the ratio to stock SB3.

    .venv/bin/python benchmarks/trainer_throughput.py --timesteps 20000 --repeats 5
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import stable_baselines3
import torch
from stable_baselines3 import PPO

from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.loader import load_spec
from ppo_platform.training.algorithms import policy_name, ppo_kl_kwargs, ppo_kwargs
from ppo_platform.training.environments import build_train_env
from trainers.ppo import MonitoredPPO
from trainers.ppo_kl import MonitoredKLPPO

REPO = Path(__file__).resolve().parents[1]
STOCK = "stock SB3 PPO"
OURS = "ours: ppo (MonitoredPPO)"
OURS_KL = "ours: ppo_kl (MonitoredKLPPO)"


@dataclass
class Timings:
    learn: list[float] = field(default_factory=list)
    update: list[float] = field(default_factory=list)
    learn_cpu: list[float] = field(default_factory=list)
    final_params: dict[str, torch.Tensor] = field(default_factory=dict)


def timed(cls: type[PPO]) -> type[PPO]:
    """`cls` whose train() adds its own wall time to `update_seconds`."""

    def train(self: Any) -> None:
        start = time.perf_counter()
        cls.train(self)
        self.update_seconds += time.perf_counter() - start

    return type(f"Timed{cls.__name__}", (cls,), {"train": train, "update_seconds": 0.0})


TRAINERS: dict[str, tuple[type[PPO], Any]] = {
    STOCK: (timed(PPO), ppo_kwargs),
    OURS: (timed(MonitoredPPO), ppo_kwargs),
    OURS_KL: (timed(MonitoredKLPPO), ppo_kl_kwargs),
}


def run_once(name: str, spec: ExperimentSpec, timesteps: int, timings: Timings) -> None:
    cls, kwargs = TRAINERS[name]
    env = build_train_env(spec)
    model = cls(policy_name(env.observation_space), env, device="cpu", verbose=0, **kwargs(spec))
    start, start_cpu = time.perf_counter(), time.process_time()
    model.learn(timesteps)
    timings.learn.append(time.perf_counter() - start)
    # CPU time of this (single-threaded) process: less sensitive to other jobs on the machine.
    timings.learn_cpu.append(time.process_time() - start_cpu)
    timings.update.append(model.update_seconds)  # type: ignore[attr-defined]
    timings.final_params = {k: v.clone() for k, v in model.policy.state_dict().items()}
    env.close()


def max_param_difference(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def machine_notes() -> str:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor() or "unknown",
    )
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{cpu}, {os.cpu_count()} logical cores (shared with other jobs; load average at "
        f"the end {load}); Python {platform.python_version()}, torch {torch.__version__}, "
        f"stable-baselines3 {stable_baselines3.__version__}; 1 torch thread."
    )


def report(
    spec_path: str,
    seed: int,
    timesteps: int,
    repeats: int,
    results: dict[str, Timings],
    command: str,
) -> str:
    stock_learn = statistics.median(results[STOCK].learn)
    stock_update = statistics.median(results[STOCK].update)
    stock_cpu = statistics.median(results[STOCK].learn_cpu)
    rows = []
    for name, t in results.items():
        learn, update = statistics.median(t.learn), statistics.median(t.update)
        cpu = statistics.median(t.learn_cpu)
        rows.append(
            f"| {name} | {learn:.2f} | {learn / stock_learn:.3f} | {update:.2f} | "
            f"{update / stock_update:.3f} | {cpu:.2f} | {cpu / stock_cpu:.3f} | "
            f"{timesteps / learn:,.0f} |"
        )
    same = max_param_difference(results[STOCK].final_params, results[OURS].final_params)
    return "\n".join(
        [
            "# Trainer throughput: our PPO update vs stock SB3 PPO",
            "",
            f"Spec `{spec_path}` hyperparameters, {timesteps:,} env steps, seed {seed}, "
            f"{repeats} alternating repetitions; "
            "medians. `update` is the time inside `train()` (the K epochs of minibatch steps); "
            "`learn` adds rollout collection (env steps + policy forward), identical code in both. "
            "`learn CPU s` is the process CPU time of `learn()`, steadier than wall time on a "
            "shared machine. Ratios are to stock SB3 (below 1: ours is faster).",
            "",
            "| trainer | learn s | learn ratio | update s | update ratio | learn CPU s | CPU ratio "
            "| env steps/s |",
            "|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            f"Largest parameter difference between stock SB3 and ours after the whole run: "
            f"{same:.3g} (same seed, same rollouts: the update is the same computation).",
            "",
            "Per-run seconds (learn): "
            + "; ".join(
                f"{name}: " + ", ".join(f"{x:.2f}" for x in t.learn) for name, t in results.items()
            ),
            "",
            f"Command: `{command}`",
            "",
            f"Machine: {machine_notes()}",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default="specs/cartpole.yaml")
    parser.add_argument("--timesteps", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-kl", action="store_true", help="Skip the ppo_kl row.")
    parser.add_argument("--out", default="benchmarks/results/trainer_throughput.md")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    spec = load_spec(REPO / args.spec)
    names = [STOCK, OURS] if args.no_kl else [STOCK, OURS, OURS_KL]
    results = {name: Timings() for name in names}
    for repeat in range(args.repeats):
        # Rotate the order so no trainer always runs first (or right after another).
        order = names[repeat % len(names) :] + names[: repeat % len(names)]
        for name in order:
            np.random.seed(spec.budget.seed)
            run_once(name, spec, args.timesteps, results[name])
            done = results[name]
            print(
                f"repeat {repeat + 1}/{args.repeats} {name}: learn {done.learn[-1]:.2f} s, "
                f"update {done.update[-1]:.2f} s",
                flush=True,
            )
    command = " ".join([".venv/bin/python", "benchmarks/trainer_throughput.py", *sys.argv[1:]])
    text = report(args.spec, spec.budget.seed, args.timesteps, args.repeats, results, command)
    out = REPO / args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
