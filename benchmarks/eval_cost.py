"""Cost of one evaluation: previous (one env, episodes one after another) vs vectorized.

Trains specs/cartpole.yaml's PPO for --train-steps env steps (one torch thread), then times
evaluations of that same snapshot, alternating the two ways, and prints medians (min-max).

    python benchmarks/eval_cost.py --train-steps 20000 --episodes 10 --repeats 5
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy

from ppo_platform.spec.loader import load_spec
from ppo_platform.training.algorithms import build_model
from ppo_platform.training.environments import build_eval_env, build_train_env, eval_seed
from trainers.evaluation import evaluate_episodes

SPEC = Path(__file__).resolve().parents[1] / "specs" / "cartpole.yaml"


def timed(evaluate: Callable[[], list[float]]) -> tuple[float, float]:
    started = time.perf_counter()
    returns = evaluate()
    return time.perf_counter() - started, statistics.mean(returns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-steps", type=int, default=20_000)
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    spec = load_spec(SPEC, [f"evaluation.episodes={args.episodes}"])
    model = build_model(spec, build_train_env(spec))
    if args.train_steps:
        model.learn(args.train_steps)
    single = make_vec_env("CartPole-v1", n_envs=1, seed=eval_seed(spec))
    batched = build_eval_env(spec)

    def previous() -> list[float]:
        rewards, _ = evaluate_policy(
            model, single, args.episodes, deterministic=True, return_episode_rewards=True
        )
        return list(rewards)  # type: ignore[arg-type]

    def vectorized() -> list[float]:
        return evaluate_episodes(model, batched, args.episodes, True, eval_seed(spec))

    samples: dict[str, list[tuple[float, float]]] = {"previous": [], "vectorized": []}
    for _ in range(args.repeats):
        samples["previous"].append(timed(previous))
        samples["vectorized"].append(timed(vectorized))
    print(f"| way | seconds per evaluation ({args.episodes} episodes) | mean return |")
    print("|---|---|---|")
    for name, rows in samples.items():
        secs = [s for s, _ in rows]
        print(
            f"| {name} | {statistics.median(secs):.3f} ({min(secs):.3f}-{max(secs):.3f}) | "
            f"{statistics.mean(r for _, r in rows):.1f} |"
        )


if __name__ == "__main__":
    main()
