"""A saved model of every trainer loads in stock SB3 where `trainers` cannot be imported, and
acts exactly as it did before it was saved."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.utils import LinearSchedule

from ppo_platform.trainers.a2c import PlatformA2C
from ppo_platform.trainers.ppo import PlatformPPO, kl_penalty_ppo
from tests.plain_sb3 import plain_sb3_actions

SEED = 5
TRAINERS = {
    "ppo": (PlatformPPO, "PPO", "CartPole-v1", {"batch_size": 32}),
    "ppo_kl": (
        kl_penalty_ppo,
        "PPO",
        "CartPole-v1",
        {"batch_size": 32, "kl_target": 1e-6, "kl_beta_init": 3.0},
    ),
    "a2c": (PlatformA2C, "A2C", "Pendulum-v1", {}),
}


def trained(name: str) -> tuple[object, np.ndarray]:
    cls, _, env_id, extra = TRAINERS[name]
    env = make_vec_env(env_id, n_envs=2, seed=SEED)
    model = cls(
        "MlpPolicy",
        env,
        seed=SEED,
        device="cpu",
        n_steps=32,
        learning_rate=LinearSchedule(1e-2, 0.0, end_fraction=1.0),
        **extra,
    )
    model.learn(128)
    observations = np.stack([env.observation_space.sample() for _ in range(64)])
    return model, observations


@pytest.mark.parametrize("name", sorted(TRAINERS))
def test_saved_model_loads_in_stock_sb3_without_trainers(name: str, tmp_path: Path) -> None:
    model, observations = trained(name)
    model.save(tmp_path / "model.zip")  # type: ignore[attr-defined]
    ours, _ = model.predict(observations, deterministic=True)  # type: ignore[attr-defined]
    theirs, seen = plain_sb3_actions(
        tmp_path / "model.zip",
        observations,
        algorithm=TRAINERS[name][1],
        env_id=TRAINERS[name][2],
        workdir=tmp_path,
    )
    assert seen["project_modules"] == []
    stock = TRAINERS[name][1]
    assert seen["class"] == f"stable_baselines3.{stock.lower()}.{stock.lower()}.{stock}"
    np.testing.assert_array_equal(theirs, ours)


def test_kl_penalty_state_survives_save_and_load(tmp_path: Path) -> None:
    model, _ = trained("ppo_kl")
    beta = model.objective.controller.beta  # type: ignore[attr-defined]
    assert beta != 1.0  # 3 x 2^k: a load that lost the state would read the default 1.0
    model.save(tmp_path / "model.zip")  # type: ignore[attr-defined]
    loaded = PlatformPPO.load(tmp_path / "model.zip", device="cpu")
    assert loaded.objective.controller.state() == {"beta": beta, "target": 1e-6, "rule": "lesson"}
    assert not hasattr(loaded, "kl_state")
