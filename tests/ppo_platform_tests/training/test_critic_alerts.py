"""A broken critic still raises the explained-variance alert through the whole run path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from gymnasium.wrappers import TransformReward
from mlflow.tracking import MlflowClient

from ppo_platform.settings import get_settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.loader import load_spec
from ppo_platform.training.runner import run_spec

CARTPOLE_SPEC = Path(__file__).resolve().parents[3] / "specs" / "cartpole.yaml"
SCALED_ENV_ID = "ppo_platform_tests/CartPoleRewardsTimes1e4-v0"


def scaled_reward_cartpole(**kwargs: Any) -> gym.Env:
    """CartPole whose rewards are 1e4 instead of 1: a value scale no unnormalized critic fits."""
    return TransformReward(gym.make("CartPole-v1", **kwargs), lambda reward: 1e4 * reward)


@pytest.fixture(scope="module", autouse=True)
def scaled_env_registered() -> None:
    if SCALED_ENV_ID not in gym.registry:
        gym.register(SCALED_ENV_ID, entry_point=scaled_reward_cartpole)


def cartpole_spec(*overrides: str) -> ExperimentSpec:
    """`make run`'s spec (specs/cartpole.yaml) with its diagnostics defaults, on 4,096 env steps
    (16 updates; explained variance is judged in the late half)."""
    tiny = [
        "budget.total_timesteps=4096",
        "evaluation.every_timesteps=0",
        "evaluation.episodes=2",
        "checkpoints.every_timesteps=0",
    ]
    return load_spec(CARTPOLE_SPEC, [*tiny, *overrides])


def stored_alerts(run_id: str) -> dict[str, Any]:
    client = MlflowClient(get_settings().tracking_uri)
    stored = Path(client.download_artifacts(run_id, "diagnostics/alerts.json"))
    return json.loads(stored.read_text())


def explained_variance_summary(run_id: str) -> dict[str, Any] | None:
    signals = stored_alerts(run_id)["signals"]
    return next((s for s in signals if s["signal"] == "explained_variance"), None)


@pytest.mark.slow
def test_a_critic_that_does_not_learn_still_alerts(shared_home: Path) -> None:
    result = run_spec(cartpole_spec("surrogate.value_coef=0.0"))
    summary = explained_variance_summary(result.run_id)
    assert summary is not None and summary["episodes"] == 1
    assert summary["worst"] <= 0.0 and "value_coef" in summary["advice"]
    assert any(line.startswith("explained_variance") for line in result.alert_summary)


@pytest.mark.slow
def test_rewards_scaled_by_1e4_without_normalization_still_alert(shared_home: Path) -> None:
    result = run_spec(cartpole_spec(f"env.id={SCALED_ENV_ID}"))
    summary = explained_variance_summary(result.run_id)
    assert summary is not None and abs(summary["worst"]) < 1e-3  # explains ~nothing
    assert "normalize rewards" in summary["advice"]
