"""Models saved before `trainers` and `api` moved under the
`ppo_platform` namespace (and before the trainers became composition) still load and act as
they did (tests/fixtures/saved_before_namespace)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from stable_baselines3.common.env_util import make_vec_env

from ppo_platform.envs.build import build_play_env
from ppo_platform.spec.loader import load_spec
from ppo_platform.trainers.policy_objectives import KLPenaltyObjective
from ppo_platform.trainers.ppo import PlatformPPO
from ppo_platform.training.algorithms import load_model

SAVED = Path(__file__).resolve().parents[2] / "fixtures" / "saved_before_namespace"


def test_a_model_saved_before_the_namespace_move_loads_and_acts_as_it_did():
    spec = load_spec(SAVED / "spec.yaml")
    env = build_play_env(spec, 0, SAVED / "vecnormalize.pkl")
    model = load_model(spec, str(SAVED / "model.zip"), env)
    assert abs(env.obs_rms.count - 516.0001) < 1e-6  # 512 steps of statistics, as saved
    observation = env.normalize_obs(np.array([[1.0, 0.0, 0.5]], dtype=np.float32))
    action, _ = model.predict(observation, deterministic=True)
    # The action this model took for this observation when it was saved (commit f4fd3fe).
    np.testing.assert_allclose(action, [[-0.17614381]], rtol=0, atol=1e-6)


def test_a_ppo_kl_model_saved_by_the_mixin_classes_loads_with_its_kl_penalty_and_trains_on():
    """Saved by `MonitoredKLPPO` (trainers/ppo_kl.py, before the trainers were composition):
    CartPole, seed 4, 2 x 32 steps, kl_target 1e-6, beta 3 doubled on each of 2 updates."""
    env = make_vec_env("CartPole-v1", n_envs=2, seed=4)
    model = PlatformPPO.load(SAVED / "ppo_kl_model.zip", env=env, device="cpu")
    assert isinstance(model.objective, KLPenaltyObjective)
    assert model.objective.state() == {"beta": 12.0, "target": 1e-6, "rule": "lesson"}
    assert model.n_updates_done == 2
    value = model.policy.predict_values(torch.tensor([[0.1, 0.2, -0.1, 0.3]])).item()
    assert value == pytest.approx(-0.04364766553044319, abs=1e-7)  # as it was saved
    model.learn(64, reset_num_timesteps=False)
    assert model.objective.state()["beta"] == 24.0  # KL far above 1e-6: doubled again
