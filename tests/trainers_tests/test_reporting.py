"""The trainers' update hooks: listeners added after construction, and a clean stop."""

from __future__ import annotations

import math

from stable_baselines3.common.env_util import make_vec_env

from ppo_platform.trainers.ppo import PlatformPPO
from ppo_platform.trainers.reporting import non_finite_metrics

SEED = 3


def tiny_ppo() -> PlatformPPO:
    """Two envs x 32 steps: one update per 64 env steps."""
    env = make_vec_env("CartPole-v1", n_envs=2, seed=SEED)
    return PlatformPPO(
        "MlpPolicy", env, seed=SEED, device="cpu", n_steps=32, batch_size=32, n_epochs=1
    )


def test_an_added_listener_sees_every_update() -> None:
    model = tiny_ppo()
    seen: list[int] = []
    model.add_update_listener(lambda m, metrics: seen.append(m.n_updates_done))
    model.learn(128)
    assert seen == [1, 2]


def test_a_stop_condition_ends_training_on_an_update_boundary() -> None:
    model = tiny_ppo()
    model.add_update_listener(lambda m, metrics: None)
    model.set_stop_condition(lambda: model.n_updates_done >= 1)
    model.learn(256)
    assert (model.n_updates_done, model.num_timesteps) == (1, 64)
    assert model.stop_requested()


def test_without_a_stop_condition_no_stop_is_requested() -> None:
    assert not tiny_ppo().stop_requested()


def test_hooks_are_not_saved_with_the_model(tmp_path) -> None:
    model = tiny_ppo()
    model.add_update_listener(lambda m, metrics: None)
    model.set_stop_condition(lambda: True)
    model.save(tmp_path / "model.zip")
    loaded = PlatformPPO.load(tmp_path / "model.zip", device="cpu")
    assert not loaded.stop_requested()
    loaded.add_update_listener(lambda m, metrics: None)  # a fresh, empty listener list


def test_non_finite_metrics_names_nan_and_inf() -> None:
    assert non_finite_metrics({"a": 1.0, "b": math.nan, "c": math.inf}) == ["b", "c"]
