"""Imported zoo policies build as written (gSDE, log std, layers, activation) and train."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from stable_baselines3.common.env_util import make_vec_env

from ppo_platform.interop import import_zoo
from ppo_platform.training.algorithms import build_model
from ppo_platform.training.runner import run_spec

ZOO = Path(__file__).resolve().parents[2] / "fixtures" / "zoo_ppo.yml"


def test_mountaincar_continuous_builds_gsde_with_its_log_std():
    spec = import_zoo(ZOO, "MountainCarContinuous-v0").spec
    model = build_model(spec, make_vec_env("MountainCarContinuous-v0", n_envs=1))
    assert model.use_sde is True
    assert model.sde_sample_freq == -1  # the entry sets use_sde but no sample frequency
    assert torch.allclose(model.policy.log_std, torch.full_like(model.policy.log_std, -3.29))
    assert model.policy.ortho_init is False


def test_separate_critic_layers_and_relu_reach_the_policy(tmp_path):
    path = tmp_path / "ppo.yml"
    path.write_text(
        "Pendulum-v1:\n  n_timesteps: !!float 1e4\n"
        '  policy_kwargs: "dict(activation_fn=nn.ReLU, net_arch=dict(pi=[32], vf=[48, 16]))"\n'
    )
    spec = import_zoo(path, "Pendulum-v1").spec
    model = build_model(spec, make_vec_env("Pendulum-v1", n_envs=1))
    policy_net = model.policy.mlp_extractor.policy_net
    value_net = model.policy.mlp_extractor.value_net
    assert [m.out_features for m in policy_net if isinstance(m, torch.nn.Linear)] == [32]
    assert [m.out_features for m in value_net if isinstance(m, torch.nn.Linear)] == [48, 16]
    assert isinstance(policy_net[1], torch.nn.ReLU)


@pytest.mark.slow
def test_imported_pendulum_trains_one_update(platform_home):
    spec = import_zoo(ZOO, "Pendulum-v1").spec
    spec = spec.model_copy(
        update={
            "budget": spec.budget.model_copy(update={"total_timesteps": 4096}),
            "evaluation": spec.evaluation.model_copy(update={"every_timesteps": 0, "episodes": 1}),
            "checkpoints": spec.checkpoints.model_copy(update={"every_timesteps": 0}),
        }
    )
    result = run_spec(spec)
    assert result.outcome == "completed"
    assert result.timesteps == 4096  # 4 envs x 1024 steps: one update
