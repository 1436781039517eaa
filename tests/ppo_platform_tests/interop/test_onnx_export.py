"""`ppo-platform export RUN_ID --onnx`: the policy as ONNX, checked by onnxruntime, for a
discrete and a continuous policy (the run's observation normalization folded in) and an Atari
CNN policy on stacked frames."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime
import pytest
from typer.testing import CliRunner

from ppo_platform.cli import EXIT_BAD_INPUT, app
from ppo_platform.interop.onnx_export import env_observations, torch_actions
from ppo_platform.settings import get_settings
from ppo_platform.spec.loader import validate_data
from ppo_platform.training.play import load_policy, trained_run
from ppo_platform.training.runner import run_spec

pytestmark = pytest.mark.slow  # real training runs behind the module
runner = CliRunner()


def spec(env_id: str) -> dict[str, Any]:
    return {
        "name": "exported",
        "env": {"id": env_id, "n_envs": 2, "normalize": {"obs": True}},
        "rollout": {"n_steps": 64},
        "update": {"epochs": 2, "minibatch_size": 64},
        "policy": {"net_arch": [16]},
        "budget": {"total_timesteps": 256},
        "evaluation": {"every_timesteps": 0, "episodes": 1},
    }


@pytest.fixture(scope="module")
def runs(shared_home: Path) -> dict[str, str]:
    return {
        env_id: run_spec(validate_data(spec(env_id))).run_id
        for env_id in ("CartPole-v1", "Pendulum-v1")
    }


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_exported_graph_acts_as_the_torch_policy(
    runs: dict[str, str], env_id: str, tmp_path: Path
) -> None:
    out = tmp_path / "policy.onnx"
    result = runner.invoke(app, ["export", runs[env_id], "--onnx", str(out)])
    assert result.exit_code == 0, result.output
    assert "normalization folded in" in result.stdout and "agreed with torch" in result.stdout
    # Checked again here, independently, on observations the export never saw.
    model, env = load_policy(trained_run(get_settings(), runs[env_id]))
    observations = env_observations(model, env, steps=64)["observation"][::-1].copy()
    observations += np.random.default_rng(7).normal(0, 0.01, observations.shape).astype(np.float32)
    expected = torch_actions(model, env, {"observation": observations})  # type: ignore[arg-type]
    session = onnxruntime.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    [actions] = session.run(["action"], {"observation": observations})
    assert actions.shape[0] == len(observations)
    if env_id == "CartPole-v1":
        assert actions.dtype == np.int64
        np.testing.assert_array_equal(actions, expected)
    else:
        np.testing.assert_allclose(actions, expected, atol=1e-5)
        assert np.all(np.abs(actions) <= 2.0)  # Pendulum's torque bounds, clipped as predict


def test_export_refuses_a_wrong_suffix_and_keeps_existing_files(
    runs: dict[str, str], tmp_path: Path
) -> None:
    wrong = runner.invoke(app, ["export", runs["CartPole-v1"], "--onnx", str(tmp_path / "p.pt")])
    assert wrong.exit_code == EXIT_BAD_INPUT and "must be a .onnx file" in wrong.stderr
    taken = tmp_path / "taken.onnx"
    taken.write_bytes(b"keep")
    again = runner.invoke(app, ["export", runs["CartPole-v1"], "--onnx", str(taken)])
    assert again.exit_code == EXIT_BAD_INPUT and taken.read_bytes() == b"keep"


def test_an_atari_cnn_policy_exports_with_its_stacked_frames(
    shared_home: Path, tmp_path: Path
) -> None:
    pong = {
        **spec("ALE/Pong-v5"),
        "env": {
            "id": "ALE/Pong-v5",
            "n_envs": 2,
            "kwargs": {"frameskip": 1},
            "wrappers": ["atari", {"name": "frame_stack", "n": 4}],
        },
        "rollout": {"n_steps": 32},
        "policy": {"net_arch": []},
        "budget": {"total_timesteps": 64},
    }
    run_id = run_spec(validate_data(pong)).run_id
    out = tmp_path / "pong.onnx"
    result = runner.invoke(app, ["export", run_id, "--onnx", str(out)])
    assert result.exit_code == 0, result.output
    assert "float32 [batch, 4, 84, 84]" in result.stdout  # channels first, 4 frames
    model, env = load_policy(trained_run(get_settings(), run_id))
    observations = env_observations(model, env, steps=32)
    session = onnxruntime.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    [actions] = session.run(["action"], observations)  # {"observation": frames}
    np.testing.assert_array_equal(actions, torch_actions(model, None, observations))
