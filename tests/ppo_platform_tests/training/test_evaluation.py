"""Vectorized evaluation: all episodes stepped together, returns fixed by snapshot and seed.

The reference is the previous evaluation: one env, SB3's evaluate_policy, one episode from an
env seeded with the episode's seed. A deterministic policy on CartPole (deterministic given its
reset seed) must give exactly the same return per seed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy

from ppo_platform.envs.build import (
    EVAL_MAX_ENVS,
    build_eval_env,
    build_train_env,
    eval_seed,
)
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.loader import validate_data
from ppo_platform.trainers.evaluation import evaluate_episodes
from ppo_platform.training.algorithms import build_model, load_model


def cartpole_spec(episodes: int) -> ExperimentSpec:
    return validate_data(
        {
            "name": "eval",
            "env": {"id": "CartPole-v1", "n_envs": 4},
            "rollout": {"n_steps": 64},
            "update": {"epochs": 4, "minibatch_size": 64, "learning_rate": 1e-3},
            "budget": {"total_timesteps": 2048, "seed": 3},
            "evaluation": {"episodes": episodes},
        }
    )


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> tuple[BaseAlgorithm, Path]:
    """A briefly trained policy (episode lengths vary with the start state) and its file."""
    spec = cartpole_spec(5)
    model = build_model(spec, build_train_env(spec))
    model.learn(2048)
    path = tmp_path_factory.mktemp("snapshot") / "model.zip"
    model.save(path)
    return model, path


def single_env_returns(model: BaseAlgorithm, seed: int, episodes: int) -> list[float]:
    """The previous evaluation: one env seeded `seed`, episodes one after the other."""
    env = make_vec_env("CartPole-v1", n_envs=1, seed=seed)
    rewards, _ = evaluate_policy(
        model, env, n_eval_episodes=episodes, deterministic=True, return_episode_rewards=True
    )
    return [float(r) for r in rewards]  # type: ignore[union-attr]


def vectorized_returns(model: BaseAlgorithm, episodes: int) -> list[float]:
    spec = cartpole_spec(episodes)
    return evaluate_episodes(model, build_eval_env(spec), episodes, True, eval_seed(spec))


def test_eval_env_holds_one_env_per_episode_up_to_the_cap() -> None:
    assert build_eval_env(cartpole_spec(1)).num_envs == 1
    assert build_eval_env(cartpole_spec(10)).num_envs == 10
    assert build_eval_env(cartpole_spec(100)).num_envs == EVAL_MAX_ENVS


def test_one_episode_equals_the_single_env_evaluation(snapshot) -> None:
    model, _ = snapshot
    seed = eval_seed(cartpole_spec(1))
    assert vectorized_returns(model, 1) == single_env_returns(model, seed, 1)


def test_each_episode_equals_the_single_env_episode_from_its_seed(snapshot) -> None:
    model, _ = snapshot
    seed = eval_seed(cartpole_spec(6))
    reference = [single_env_returns(model, seed + i, 1)[0] for i in range(6)]
    assert len(set(reference)) > 1  # the seeds matter: the comparison means something
    assert sorted(vectorized_returns(model, 6)) == sorted(reference)


def test_same_snapshot_and_seed_give_the_same_returns_at_any_time(snapshot) -> None:
    model, path = snapshot
    spec = cartpole_spec(6)
    env = build_eval_env(spec)
    first = evaluate_episodes(model, env, 6, True, eval_seed(spec))
    again = evaluate_episodes(model, env, 6, True, eval_seed(spec))  # same env, used before
    reloaded = load_model(spec, str(path), build_train_env(spec))  # as another process would
    elsewhere = evaluate_episodes(reloaded, build_eval_env(spec), 6, True, eval_seed(spec))
    assert first == again == elsewhere


def test_more_episodes_than_envs_are_all_counted_and_repeatable(snapshot) -> None:
    model, _ = snapshot
    episodes = EVAL_MAX_ENVS + 4
    returns = vectorized_returns(model, episodes)
    assert len(returns) == episodes
    assert returns == vectorized_returns(model, episodes)


def test_one_batched_forward_pass_per_step_for_all_episodes(snapshot) -> None:
    model, _ = snapshot
    batches: list[int] = []
    predict = model.predict

    def counting_predict(observation: Any, *args: Any, **kwargs: Any) -> Any:
        batches.append(len(observation))
        return predict(observation, *args, **kwargs)

    model.predict = counting_predict  # type: ignore[method-assign]
    try:
        returns = vectorized_returns(model, 8)
    finally:
        del model.predict
    # CartPole pays 1 per step: the longest episode sets the number of steps; 8 at a time.
    assert set(batches) == {8}
    assert len(batches) == max(returns)
