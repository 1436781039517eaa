"""A video shows the episode's terminal frame (the goal reached), and an env that cannot be
filmed says why (never an empty reason)."""

from __future__ import annotations

from pathlib import Path

import imageio.v2 as imageio
import numpy as np
import pytest
from env_package_fixtures import (
    LOCAL_BEACON_ENV,
    LOCAL_FAULTY_ENV,
    LOCAL_MODULE,
    LOCAL_NO_RENDER_ENV,
)
from stable_baselines3 import PPO

from ppo_platform.envs.build import build_play_env
from ppo_platform.settings import get_settings
from ppo_platform.spec.loader import validate_data
from ppo_platform.training.play import evaluation_videos, record


@pytest.fixture(autouse=True)
def with_local_envs(own_envs_importable: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PPO_PLATFORM_ENV_PACKAGES", LOCAL_MODULE)
    get_settings.cache_clear()


def _spec(env_id: str) -> object:
    return validate_data(
        {
            "name": "filmed",
            "env": {"id": env_id},
            "rollout": {"n_steps": 64},
            "update": {"minibatch_size": 64},
            "budget": {"total_timesteps": 64},
            "evaluation": {"video": 1},
        }
    )


def test_the_video_ends_on_the_terminal_frame(tmp_path: Path) -> None:
    env = build_play_env(_spec(LOCAL_BEACON_ENV), 0, None, "rgb_array")  # type: ignore[arg-type]
    model = PPO("MlpPolicy", env, n_steps=64, batch_size=64, seed=0)
    path = tmp_path / "beacon.mp4"
    try:
        [episode] = record(model, env, path, 1)
    finally:
        env.close()
    assert episode.length == 5
    frames = [np.asarray(frame) for frame in imageio.get_reader(path)]
    assert len(frames) == 6  # after the reset, then after each of the five steps
    levels = [float(frame.mean()) for frame in frames]
    assert levels[-1] > 240, levels  # the goal reached: white, not the next episode's start
    assert levels[0] < 10, levels


@pytest.mark.parametrize(
    ("env_id", "reason"),
    [
        (LOCAL_NO_RENDER_ENV, "the env takes no render_mode argument, so it cannot render"),
        (LOCAL_FAULTY_ENV, "has no render() of its own (gymnasium's default raises"),
    ],
)
def test_an_env_that_cannot_be_filmed_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], env_id: str, reason: str
) -> None:
    spec = _spec(env_id)
    env = build_play_env(spec, 0, None)  # type: ignore[arg-type]
    model = PPO("MlpPolicy", env, n_steps=64, batch_size=64, seed=0)
    env.close()
    assert evaluation_videos(model, spec, None, tmp_path) == []  # type: ignore[arg-type]
    warning = capsys.readouterr().err
    assert "warning: evaluation.video: no video recorded: " in warning
    assert reason in warning
    assert not warning.rstrip().endswith("no video recorded:")
