"""`ppo-platform export --onnx` for Discrete observations (int64 indices, one-hot encoded in the
graph as SB3 preprocesses them) and Dict observations (one graph input per key, a Box key's
normalization folded in), checked by onnxruntime against the torch policy on the run's env."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import onnxruntime
import pytest
from gymnasium import spaces
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import VecNormalize
from typer.testing import CliRunner

from ppo_platform.cli import app
from ppo_platform.errors import BadInputError
from ppo_platform.interop.onnx_export import check_exportable, env_observations, torch_actions
from ppo_platform.settings import get_settings
from ppo_platform.spec.loader import validate_data
from ppo_platform.training.play import load_policy, trained_run
from ppo_platform.training.runner import run_spec
from tests.ppo_platform_tests.interop.test_onnx_export import spec as exported_spec

pytestmark = pytest.mark.slow  # real (tiny) training runs
runner = CliRunner()
DICT_ENV_ID = "OnnxDictDrift-v0"


def spec(env_id: str) -> dict[str, Any]:
    """test_onnx_export's tiny run, without observation normalization (SB3's VecNormalize
    refuses Discrete observations; of a Dict, the platform normalizes the Box keys only)."""
    return {**exported_spec(env_id), "env": {"id": env_id, "n_envs": 2}}


def _export(run_id: str, out: Path) -> str:
    result = runner.invoke(app, ["export", run_id, "--onnx", str(out)])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_discrete_observations_export_as_int64_indices(shared_home: Path, tmp_path: Path) -> None:
    run_id = run_spec(validate_data(spec("FrozenLake-v1"))).run_id
    out = tmp_path / "frozen.onnx"
    assert "`observation` (int64 [batch])" in _export(run_id, out)
    model, _ = load_policy(trained_run(get_settings(), run_id))
    cells = {"observation": np.arange(16, dtype=np.int64)}  # every cell of the 4x4 lake
    session = onnxruntime.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    [actions] = session.run(["action"], cells)
    np.testing.assert_array_equal(actions, torch_actions(model, None, cells))


class BitsEnv(gym.Env):
    """MultiBinary observations: SB3 trains on them, the export refuses them."""

    observation_space = spaces.MultiBinary(3)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        return np.zeros(3, np.int8), {}

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict]:
        return np.ones(3, np.int8), 0.0, True, False, {}


def test_other_observation_spaces_are_refused_naming_the_fix() -> None:
    with pytest.raises(BadInputError) as refused:
        check_exportable(PPO("MlpPolicy", BitsEnv(), n_steps=8, batch_size=8, device="cpu"))
    [issue] = refused.value.issues
    assert issue.path == "observation_space" and issue.value == "MultiBinary"
    assert "flatten_observation" in (issue.fix or "")


class DictDrift(gym.Env):
    """Steer a drifting point; observes {"position": Box(2) far from unit scale, "goal":
    Discrete(3)}, acts in Box(1): normalization matters and every action is a float."""

    observation_space = spaces.Dict(
        {"position": spaces.Box(-np.inf, np.inf, (2,), np.float32), "goal": spaces.Discrete(3)}
    )
    action_space = spaces.Box(-1.0, 1.0, (1,), np.float32)

    def __init__(self, render_mode: str | None = None) -> None:
        self.render_mode = render_mode

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self.x, self.goal = (
            50.0 + float(self.np_random.normal(0, 5)),
            int(self.np_random.integers(3)),
        )
        return self._obs(), {}

    def _obs(self) -> dict[str, Any]:
        return {"position": np.array([self.x, 200.0 - 3 * self.x], np.float32), "goal": self.goal}

    def step(self, action: np.ndarray) -> tuple[Any, float, bool, bool, dict]:
        self.x += 4.0 * float(action[0])
        return self._obs(), -abs(self.x - 45.0 - 5 * self.goal), False, False, {}


def test_dict_observations_export_one_input_per_key_normalization_folded_in(
    shared_home: Path, tmp_path: Path
) -> None:
    if DICT_ENV_ID not in gym.registry:
        gym.register(DICT_ENV_ID, entry_point=DictDrift, max_episode_steps=20)
    data = spec(DICT_ENV_ID)
    data["env"] = {**data["env"], "normalize": {"obs": True}}  # the Box key only
    run_id = run_spec(validate_data(data)).run_id
    out = tmp_path / "dict_normalized.onnx"
    shown = _export(run_id, out)
    assert "normalization folded in" in shown
    assert "`position` (float32 [batch, 2])" in shown and "`goal` (int64 [batch])" in shown
    model, stats = load_policy(trained_run(get_settings(), run_id))
    assert isinstance(stats, VecNormalize) and sorted(stats.obs_rms) == ["position"]
    assert stats.obs_rms["position"].mean[0] > 30  # far from identity: the folding matters
    observations = env_observations(model, stats, steps=64)
    rng = np.random.default_rng(3)  # positions the export's own check never saw
    observations["position"] = observations["position"][::-1] + rng.normal(0, 2, (80, 2)).astype(
        np.float32
    )
    session = onnxruntime.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    assert sorted(i.name for i in session.get_inputs()) == ["goal", "position"]
    [actions] = session.run(["action"], observations)
    expected = torch_actions(model, stats, observations)  # SB3: VecNormalize, then predict
    np.testing.assert_allclose(actions, expected, atol=1e-5)
    unnormalized = torch_actions(model, None, observations)
    assert np.abs(actions - unnormalized).max() > 1e-3  # not the raw observations' actions
