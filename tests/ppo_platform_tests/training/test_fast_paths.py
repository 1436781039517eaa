"""`PPO_PLATFORM_FAST_PATHS=0`: a run trains on stock stable-baselines3 and torch end to end,
learns, and records that its fast paths were off; with them on (the default) it records `on`."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

from ppo_platform.envs.build import build_train_env
from ppo_platform.envs.faults import RaiseEnvFaults
from ppo_platform.errors import BadInputError, exit_code
from ppo_platform.settings import get_settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.loader import load_spec
from ppo_platform.tracking import tags as tag
from ppo_platform.trainers.fast import ENV_VAR
from ppo_platform.trainers.fast.dummy_vec_env import LeanDummyVecEnv
from ppo_platform.trainers.fast.vec_normalize import LeanVecNormalize
from ppo_platform.training.runner import run_spec

CARTPOLE = Path(__file__).resolve().parents[3] / "specs" / "cartpole.yaml"


def cartpole(steps: int, *overrides: str) -> ExperimentSpec:
    every = "evaluation.every_timesteps=0"
    return load_spec(CARTPOLE, [f"budget.total_timesteps={steps}", every, *overrides])


@pytest.mark.parametrize(
    ("value", "dummy", "normalize"),
    [("0", DummyVecEnv, VecNormalize), ("1", LeanDummyVecEnv, LeanVecNormalize)],
)
def test_the_switch_picks_the_envs_classes(
    value: str, dummy: type, normalize: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_VAR, value)
    env = build_train_env(cartpole(256, "env.normalize.obs=true", "env.vectorization=dummy"))
    try:
        # Normalization, then the wrapper that keeps an env's own exception, then the envs.
        assert type(env) is normalize
        assert type(env.venv) is RaiseEnvFaults  # type: ignore[attr-defined]
        assert type(env.venv.venv) is dummy  # type: ignore[attr-defined]
    finally:
        env.close()


def test_a_value_neither_on_nor_off_is_refused_before_a_run_naming_the_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ENV_VAR, "fast")
    with pytest.raises(BadInputError) as refused:
        build_train_env(cartpole(256))
    [issue] = refused.value.issues
    assert (issue.path, issue.value) == (ENV_VAR, "fast")
    assert exit_code(refused.value) == 2 and "set it to 1" in (issue.fix or "")


@pytest.mark.slow
def test_with_fast_paths_off_cartpole_learns_on_stock_sb3_and_the_run_says_so(
    shared_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_VAR, "0")
    result = run_spec(cartpole(16_384, "evaluation.episodes=5"))
    run = MlflowClient(get_settings().tracking_uri).get_run(result.run_id)
    assert run.data.tags[tag.FAST_PATHS] == f"off ({ENV_VAR}=0)"
    assert result.outcome == "completed"
    # Random play lasts ~22 steps; 16k steps of the tuned CartPole spec reach well past it.
    assert result.final_eval_mean is not None and result.final_eval_mean > 100
