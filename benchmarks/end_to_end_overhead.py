"""End-to-end cost of the platform vs a plain stable-baselines3 script on identical settings.

Both train CartPole-v1 with specs/cartpole.yaml's hyperparameters (rl-zoo's tuned values) for
the same env steps, one torch thread, same seed. The platform run includes MLflow logging,
diagnostics, checkpoints and one final evaluation; periodic evaluation is switched off so the
two do the same training work. Repetitions alternate to share the machine's noise.

    .venv/bin/python benchmarks/end_to_end_overhead.py --steps 20000 --repeats 3
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env

from ppo_platform.settings import get_settings
from ppo_platform.spec.loader import load_spec
from ppo_platform.training.algorithms import ppo_kwargs
from ppo_platform.training.runner import run_spec

SPEC = Path(__file__).resolve().parents[1] / "specs" / "cartpole.yaml"


def plain_sb3(steps: int) -> float:
    spec = load_spec(SPEC, [f"budget.total_timesteps={steps}"])
    started = time.perf_counter()
    env = make_vec_env("CartPole-v1", n_envs=spec.env.n_envs, seed=spec.budget.seed)
    model = PPO("MlpPolicy", env, device="cpu", verbose=0, **ppo_kwargs(spec))
    model.learn(steps)
    return time.perf_counter() - started


def platform(steps: int) -> tuple[float, float, float]:
    spec = load_spec(
        SPEC,
        [
            f"budget.total_timesteps={steps}",
            "evaluation.every_timesteps=0",
            "evaluation.episodes=1",
            "checkpoints.every_timesteps=0",
        ],
    )
    started = time.perf_counter()
    result = run_spec(spec)
    return time.perf_counter() - started, result.tracking_seconds, result.seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    logging.getLogger("mlflow").setLevel(logging.WARNING)
    torch.set_num_threads(1)
    home = tempfile.mkdtemp(prefix="ppo_bench_")
    os.environ["PPO_PLATFORM_HOME"] = home
    get_settings.cache_clear()
    platform(2048)  # create the MLflow database and warm imports outside the timing
    plain, ours, tracking, loop = [], [], [], []
    for _ in range(args.repeats):
        plain.append(plain_sb3(args.steps))
        wall, writes, training = platform(args.steps)
        ours.append(wall)
        tracking.append(writes)
        loop.append(training)
    p, o = statistics.median(plain), statistics.median(ours)
    t, lo = statistics.median(tracking), statistics.median(loop)
    print(
        "| env steps | plain SB3 (s) | platform (s) | ratio | training loop (s) | "
        "MLflow writes (s) | writes / wall |"
    )
    print("|---|---|---|---|---|---|---|")
    print(
        f"| {args.steps} | {p:.2f} | {o:.2f} | {o / p:.3f} | {lo:.2f} | {t:.3f} | "
        f"{100 * t / o:.2f}% |"
    )
    print(f"raw plain={[round(x, 2) for x in plain]} platform={[round(x, 2) for x in ours]}")


if __name__ == "__main__":
    main()
