"""Helpers of the trainer tests: a seeded model with one collected rollout, and a seeded update.

A module of its own (not conftest): several test folders have a conftest.py, and
`from conftest import ...` would pick whichever was imported first.
"""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np
import torch
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm

Model = TypeVar("Model", bound=OnPolicyAlgorithm)


def collect_one_rollout(model: Model, total_timesteps: int = 10_000) -> Model:
    """`model` after it has collected one rollout (buffer full, GAE computed)."""
    _, callback = model._setup_learn(total_timesteps=total_timesteps, callback=None)
    model.collect_rollouts(model.env, callback, model.rollout_buffer, model.n_steps)  # type: ignore[arg-type]
    return model


def with_rollout(
    cls: type[Model], env_id: str, *, seed: int, n_envs: int = 2, **kwargs: Any
) -> Model:
    """A seeded MlpPolicy model on `n_envs` copies of `env_id` that has collected one rollout."""
    env = make_vec_env(env_id, n_envs=n_envs, seed=seed)
    return collect_one_rollout(cls("MlpPolicy", env, seed=seed, device="cpu", **kwargs))


def train_seeded(model: OnPolicyAlgorithm) -> dict[str, float]:
    """Run one update with the global RNGs SB3 shuffles with seeded identically; its metrics."""
    np.random.seed(11)
    torch.manual_seed(11)
    model.logger.name_to_value.clear()
    model.train()
    return dict(model.logger.name_to_value)
