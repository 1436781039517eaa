"""An exported `.onnx` travels alone: one self-contained file, loaded from a copy in another
folder. Weights past protobuf's 2 GiB limit go to a visible `<name>.onnx.data` beside it (the
limit is lowered here to reach that path with a small policy)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import onnxruntime
import pytest
from typer.testing import CliRunner

from ppo_platform.cli import app
from ppo_platform.interop import onnx_export
from ppo_platform.settings import get_settings
from ppo_platform.spec.loader import validate_data
from ppo_platform.training.play import load_policy, trained_run
from ppo_platform.training.runner import run_spec

pytestmark = pytest.mark.slow  # one real training run behind the module
runner = CliRunner()

ACROBOT = {
    "name": "acrobot-export",
    "env": {"id": "Acrobot-v1", "n_envs": 2},
    "rollout": {"n_steps": 32},
    "update": {"epochs": 1, "minibatch_size": 32},
    "policy": {"net_arch": [24, 12]},
    "budget": {"total_timesteps": 128},
    "evaluation": {"every_timesteps": 0, "episodes": 1},
}


@pytest.fixture(scope="module")
def run_id(shared_home: Path) -> str:
    return run_spec(validate_data(ACROBOT)).run_id


def _actions_from(path: Path, run: str) -> tuple[np.ndarray, np.ndarray]:
    model, env = load_policy(trained_run(get_settings(), run))
    observations = onnx_export.env_observations(model, env, steps=16)
    env.close()
    expected = onnx_export.torch_actions(model, None, observations)
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(["action"], observations)[0], np.asarray(expected)


def test_the_exported_file_is_whole_and_loads_from_another_folder(
    run_id: str, tmp_path: Path
) -> None:
    exported = tmp_path / "made" / "acrobot.onnx"
    exported.parent.mkdir()
    result = runner.invoke(app, ["export", run_id, "--onnx", str(exported)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in exported.parent.iterdir()) == ["acrobot.onnx"]  # no hidden data
    elsewhere = tmp_path / "elsewhere" / "policy.onnx"
    elsewhere.parent.mkdir()
    shutil.copy(exported, elsewhere)
    exported.unlink()
    actions, expected = _actions_from(elsewhere, run_id)
    assert np.array_equal(actions.reshape(-1), expected.reshape(-1))
    assert "one self-contained file" in result.stdout


def test_weights_past_the_limit_lie_in_a_visible_file_that_travels_with_it(
    run_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(onnx_export, "EXTERNAL_DATA_BYTES", 0)
    exported = tmp_path / "made" / "big.onnx"
    exported.parent.mkdir()
    result = runner.invoke(app, ["export", run_id, "--onnx", str(exported)])
    assert result.exit_code == 0, result.output
    assert "its weights are in big.onnx.data: copy both files together" in result.stdout
    assert sorted(p.name for p in exported.parent.iterdir()) == ["big.onnx", "big.onnx.data"]
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(exported.parent, elsewhere)
    shutil.rmtree(exported.parent)
    actions, expected = _actions_from(elsewhere / "big.onnx", run_id)
    assert np.array_equal(actions.reshape(-1), expected.reshape(-1))
