"""A model and its normalisation statistics saved before `trainers` and `api` moved under the
`ppo_platform` namespace still load and act as they did (tests/fixtures/saved_before_namespace)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ppo_platform.envs.build import build_play_env
from ppo_platform.spec.loader import load_spec
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
