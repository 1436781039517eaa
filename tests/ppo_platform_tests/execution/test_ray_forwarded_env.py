"""What travels with a Ray task: the platform's settings, never its secrets (Ray's dashboard
shows a task's runtime env)."""

from __future__ import annotations

import pytest

from ppo_platform.execution.ray_executor import forwarded_env


def test_settings_travel_and_secrets_stay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PPO_PLATFORM_HOME", "/data")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://mlflow:5000")
    monkeypatch.setenv("PPO_PLATFORM_API_KEYS", '{"alice": "k"}')
    monkeypatch.setenv("PPO_PLATFORM_DASHBOARD_SECRET", "s3cret")
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "pw")
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", "tok")
    monkeypatch.setenv("UNRELATED", "x")
    env = forwarded_env()
    assert env["PPO_PLATFORM_HOME"] == "/data"
    assert env["MLFLOW_TRACKING_URI"] == "http://mlflow:5000"
    for secret in (
        "PPO_PLATFORM_API_KEYS",
        "PPO_PLATFORM_DASHBOARD_SECRET",
        "MLFLOW_TRACKING_PASSWORD",
        "MLFLOW_TRACKING_TOKEN",
        "UNRELATED",
    ):
        assert secret not in env
