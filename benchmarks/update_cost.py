"""CPU time of the PPO update alone, in one process: our `ClipPPO.train()` vs stock SB3 `PPO`.

specs/cartpole.yaml's shapes (8 envs x 32 steps, K 20, one minibatch of 256), or with
`--shape halfcheetah` specs/halfcheetah_cleanrl.yaml's (1 env x 2048 steps, K 10, 32 minibatches
of 64, value clipping, a Gaussian head): one rollout is collected, then `train()` runs
`--updates` times on it; CPU time (process user + sys, one torch thread) per Adam step. CPU
time, not wall, so that a loaded machine still compares fairly.

    python benchmarks/update_cost.py --updates 50 --rounds 3 [--profile]
    python benchmarks/update_cost.py --shape halfcheetah --updates 2 --rounds 3
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.utils import ConstantSchedule, LinearSchedule

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from trainers.ppo import MonitoredPPO


class AutogradPPO(MonitoredPPO):
    """Ours without `trainers.fast.manual`: the loss's gradients by autograd."""

    def _manual_loss(self) -> None:
        return None


# shape: (env id, envs, PPO keyword arguments)
SHAPES: dict[str, tuple[str, int, dict[str, Any]]] = {
    "cartpole": (
        "CartPole-v1",
        8,
        {
            "n_steps": 32,
            "batch_size": 256,
            "n_epochs": 20,
            "gamma": 0.98,
            "gae_lambda": 0.8,
            "learning_rate": LinearSchedule(1e-3, 0.0, end_fraction=1.0),
            "clip_range": LinearSchedule(0.2, 0.0, end_fraction=1.0),
            "policy_kwargs": {"net_arch": [64, 64]},
        },
    ),
    "halfcheetah": (
        "HalfCheetah-v5",
        1,
        {
            "n_steps": 2048,
            "batch_size": 64,
            "n_epochs": 10,
            "learning_rate": LinearSchedule(3e-4, 0.0, end_fraction=1.0),
            "clip_range": ConstantSchedule(0.2),
            "clip_range_vf": ConstantSchedule(0.2),
            "policy_kwargs": {"net_arch": [64, 64]},
        },
    ),
}


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def model_with_rollout(cls: type[PPO], shape: str) -> PPO:
    env_id, n_envs, kwargs = SHAPES[shape]
    env = make_vec_env(env_id, n_envs=n_envs, seed=0)
    model = cls("MlpPolicy", env, seed=0, device="cpu", **kwargs)
    model._setup_learn(total_timesteps=100_000, callback=None)
    callback = model._init_callback(None)
    model.collect_rollouts(model.env, callback, model.rollout_buffer, model.n_steps)  # type: ignore[arg-type]
    model._current_progress_remaining = 0.5
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=50, help="train() calls per round")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds, medians")
    parser.add_argument("--profile", action="store_true", help="cProfile ours (CPU time)")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="cartpole")
    args = parser.parse_args()
    torch.set_num_threads(1)
    models = {
        "stock SB3 PPO": model_with_rollout(PPO, args.shape),
        "ours, autograd": model_with_rollout(AutogradPPO, args.shape),
        "ours": model_with_rollout(MonitoredPPO, args.shape),
    }
    if args.profile:
        profiler = cProfile.Profile(time.thread_time)
        profiler.runcall(lambda: [models["ours"].train() for _ in range(args.updates)])
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(45)
        return
    per_step: dict[str, list[float]] = {name: [] for name in models}
    for model in models.values():
        model.train()  # warm-up
    for round_ in range(args.rounds):
        for name in models if round_ % 2 == 0 else reversed(list(models)):
            started = cpu_seconds()
            for _ in range(args.updates):
                models[name].train()
            model = models[name]
            minibatches = -(-model.n_steps * model.n_envs // model.batch_size)
            steps = args.updates * model.n_epochs * minibatches
            per_step[name].append(1e6 * (cpu_seconds() - started) / steps)
    for name, values in per_step.items():
        print(
            f"{name:15} {statistics.median(values):7.1f} us CPU per Adam step "
            f"({min(values):.1f}-{max(values):.1f}, {args.rounds} rounds)"
        )
    medians = {name: statistics.median(values) for name, values in per_step.items()}
    print(
        f"ours / stock: {medians['ours'] / medians['stock SB3 PPO']:.2f}x; ours / ours "
        f"autograd: {medians['ours'] / medians['ours, autograd']:.2f}x; "
        f"1-min load {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
