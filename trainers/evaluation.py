"""Policy evaluation: all episodes stepped together, one batched forward pass per env step.

The evaluation env holds up to `episodes` envs (see ppo_platform.envs.build); SB3's
`evaluate_policy` gives env i exactly (episodes + i) // n_envs episodes, so short episodes are
not over-counted. Each evaluation reseeds env i with `seed + i` first, so its returns depend on
the policy weights, the seed and the number of episodes only: the same snapshot evaluated at
another time (or in another process) gives the same returns.
"""

from __future__ import annotations

from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.vec_env import VecEnv


def evaluate_episodes(
    model: BaseAlgorithm, env: VecEnv, episodes: int, deterministic: bool, seed: int | None
) -> list[float]:
    """Returns of `episodes` episodes of `model` on `env`, in the order they finished."""
    if seed is not None:
        env.seed(seed)  # applied at evaluate_policy's reset: env i starts from seed + i
    rewards, _ = evaluate_policy(
        model,
        env,
        n_eval_episodes=episodes,
        deterministic=deterministic,
        return_episode_rewards=True,
    )
    return [float(r) for r in rewards]  # type: ignore[union-attr]
