"""The extras' environments train as planned, with evaluation on: an ALE game (SB3's Atari
preprocessing, 4 stacked 84x84 frames into the Nature CNN) and MuJoCo's HalfCheetah-v5.
CI installs both extras (Makefile EXTRAS), so these fail rather than skip without them."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from stable_baselines3 import PPO

from ppo_platform.planner import plan_experiment
from ppo_platform.settings import get_settings
from ppo_platform.training.resume import run_folder
from ppo_platform.training.runner import run_spec

pytestmark = pytest.mark.slow


def _final_model(run_id: str) -> PPO:
    return PPO.load(run_folder(get_settings(), run_id) / "final" / "model.zip", device="cpu")


def test_a_planned_ale_game_trains_with_evaluation_on_four_stacked_84x84_frames(
    shared_home: Path,
) -> None:
    planned = plan_experiment(
        "ALE/Pong-v5",
        100_000,
        "atari",
        [
            "env.n_envs=2",
            "budget.total_timesteps=512",
            "evaluation.every_timesteps=256",
            "evaluation.episodes=1",
            # a short game, so an evaluation episode ends within the test's time
            "env.kwargs.max_num_frames_per_episode=800",
        ],
    )
    assert [w.name for w in planned.spec.env.wrappers] == ["atari", "frame_stack"]
    assert planned.spec.env.wrappers[1].n == 4
    assert planned.spec.policy.net_arch == []
    result = run_spec(planned.spec)
    assert result.status == "FINISHED"
    assert result.final_eval_mean is not None and math.isfinite(result.final_eval_mean)
    assert -21 <= result.final_eval_mean <= 21  # a Pong score, not a clipped per-life reward
    model = _final_model(result.run_id)
    assert model.observation_space.shape == (4, 84, 84)
    assert type(model.policy.features_extractor).__name__ == "NatureCNN"
    assert len(list(model.policy.mlp_extractor.policy_net)) == 0


def test_planned_halfcheetah_v5_trains_with_evaluation_on(shared_home: Path) -> None:
    planned = plan_experiment(
        "HalfCheetah-v5",
        1_000_000,
        "continuous-control",
        [
            "env.n_envs=2",
            "rollout.n_steps=512",
            "budget.total_timesteps=2048",
            "evaluation.every_timesteps=1024",
            "evaluation.episodes=1",
        ],
    )
    result = run_spec(planned.spec)
    assert result.status == "FINISHED"
    # 1,000-step episodes: about -0.1 x 1000 control cost at random, well under 1e4 at best
    assert result.final_eval_mean is not None and -2000 < result.final_eval_mean < 10_000
    model = _final_model(result.run_id)
    assert model.observation_space.shape == (17,)
    assert model.action_space.shape == (6,)
