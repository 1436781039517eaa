"""A2C baseline: stock SB3's update step for step, with the diagnostics that apply to it."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest
import torch
from stable_baselines3 import A2C
from stable_baselines3.common.env_util import make_vec_env
from trainer_rollouts import train_seeded, with_rollout

from ppo_platform.health import DiagnosticsMonitor, Thresholds
from ppo_platform.trainers.a2c import PlatformA2C
from ppo_platform.trainers.errors import NonFiniteError

SEED = 5


def stock_and_ours(env_id: str = "CartPole-v1", **kwargs: Any) -> tuple[A2C, PlatformA2C]:
    stock = with_rollout(A2C, env_id, seed=SEED, n_envs=4, n_steps=8, **kwargs)
    ours = PlatformA2C(
        "MlpPolicy",
        make_vec_env(env_id, n_envs=4, seed=SEED),
        seed=SEED,
        device="cpu",
        n_steps=8,
        **kwargs,
    )
    ours._setup_learn(total_timesteps=10_000, callback=None)
    ours.policy.load_state_dict(stock.policy.state_dict())
    # Both optimizers are fresh (no state yet); ours keeps its foreach setting.
    assert ours.policy.optimizer.param_groups[0]["foreach"] is (
        True if ours.fast_paths.on else None
    )
    ours.rollout_buffer = copy.deepcopy(stock.rollout_buffer)
    return stock, ours  # type: ignore[return-value]


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
@pytest.mark.parametrize("normalize_advantage", [False, True])
def test_one_update_gives_the_same_parameters_as_stock_sb3_a2c(
    env_id: str, normalize_advantage: bool
) -> None:
    stock, ours = stock_and_ours(env_id, normalize_advantage=normalize_advantage)
    train_seeded(stock)
    train_seeded(ours)
    theirs, mine = stock.policy.state_dict(), ours.policy.state_dict()
    for name, value in theirs.items():
        torch.testing.assert_close(mine[name], value, rtol=1e-6, atol=1e-7, msg=name)


@pytest.mark.parametrize(
    ("ours_key", "stock_key"),
    [
        ("train/policy_gradient_loss", "train/policy_loss"),
        ("train/value_loss", "train/value_loss"),
        ("train/entropy_loss", "train/entropy_loss"),
        ("train/explained_variance", "train/explained_variance"),
    ],
)
def test_diagnostics_match_stock_sb3_a2c(ours_key: str, stock_key: str) -> None:
    stock, ours = stock_and_ours()
    expected = train_seeded(stock)[stock_key]
    # Explained variance: SB3 computes it in float32, we in float64.
    tolerance = 1e-5 if ours_key == "train/explained_variance" else 1e-7
    assert train_seeded(ours)[ours_key] == pytest.approx(expected, rel=1e-5, abs=tolerance)


def test_update_reports_loss_grad_norm_and_learning_rate() -> None:
    _, ours = stock_and_ours(learning_rate=5e-4)
    metrics = train_seeded(ours)
    assert metrics["train/learning_rate"] == 5e-4
    assert metrics["train/grad_norm"] > 0
    assert metrics["train/loss"] == pytest.approx(
        metrics["train/policy_gradient_loss"]
        + 0.5 * metrics["train/value_loss"]
        + 0.0 * metrics["train/entropy_loss"],
        rel=1e-5,
    )


def test_update_reports_no_ratio_signals() -> None:
    _, ours = stock_and_ours()
    metrics = train_seeded(ours)
    assert not [k for k in metrics if "kl" in k or "clip" in k or "ratio" in k]


def test_monitor_raises_no_alert_for_the_signals_a2c_lacks() -> None:
    seen: list[dict[str, float]] = []
    model = PlatformA2C(
        "MlpPolicy",
        make_vec_env("CartPole-v1", n_envs=4, seed=SEED),
        seed=SEED,
        device="cpu",
        n_steps=8,
        update_listeners=[lambda m, metrics: seen.append(metrics)],
    )
    model.learn(32 * 20)
    monitor = DiagnosticsMonitor(Thresholds(window=1), total_timesteps=1)  # all updates "late"
    alerts = [a for i, metrics in enumerate(seen) for a in monitor.check(i, 32 * (i + 1), metrics)]
    assert len(seen) == 20
    assert not [a for a in alerts if a.signal.startswith(("approx_kl", "clip_fraction"))]


def test_non_finite_parameters_raise_non_finite_error() -> None:
    _, ours = stock_and_ours()
    with torch.no_grad():
        next(iter(ours.policy.parameters())).fill_(math.nan)
    with pytest.raises(NonFiniteError):
        train_seeded(ours)


def test_save_and_load_round_trip_keeps_our_class(tmp_path) -> None:
    _, ours = stock_and_ours()
    ours.save(tmp_path / "a2c.zip")
    assert type(PlatformA2C.load(tmp_path / "a2c.zip", device="cpu")) is PlatformA2C
