"""The plain stable-baselines3 script the whole-process benchmark compares the platform with.

What a user would write by hand: specs/cartpole.yaml's hyperparameters (rl-baselines3-zoo's
tuned CartPole-v1 values), one torch thread, seed 0, `learn`, no evaluation, no logging, no
saving. It imports nothing from this project, so its start-up is SB3's own.

    python benchmarks/overhead/plain_sb3_cartpole.py --steps 20000
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def _mark(label: str) -> None:
    """PPO_PLATFORM_TRACE_TIMES=1: the same time marks as the platform's (fixed_cost_timeline)."""
    if os.environ.get("PPO_PLATFORM_TRACE_TIMES", "") not in ("", "0"):
        sys.stderr.write(f"trace {time.perf_counter():.6f} {os.getpid()} plain {label}\n")


_mark("script begins")


def linear(start: float):
    return lambda progress_remaining: start * max(0.0, min(1.0, progress_remaining))


def train_plain(steps: int, seed: int = 0) -> None:
    """The script's whole training: build SB3's PPO with the spec's values and `learn`."""
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    _mark("torch, SB3 imported")
    torch.set_num_threads(1)
    env = make_vec_env("CartPole-v1", n_envs=8, seed=seed)
    _mark("env built")
    model = PPO(
        "MlpPolicy",
        env,
        n_steps=32,
        batch_size=256,
        n_epochs=20,
        learning_rate=linear(1.0e-3),
        clip_range=linear(0.2),
        max_grad_norm=0.5,
        vf_coef=0.5,
        ent_coef=0.0,
        gamma=0.98,
        gae_lambda=0.8,
        policy_kwargs={"net_arch": [64, 64], "activation_fn": torch.nn.Tanh},
        seed=seed,
        device="cpu",
        verbose=0,
    )
    _mark("model built")
    model.learn(steps)
    _mark("learn done")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    train_plain(args.steps, args.seed)
    _mark("main returns")


if __name__ == "__main__":
    main()
