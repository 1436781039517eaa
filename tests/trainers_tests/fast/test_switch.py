"""ppo_platform.trainers.fast.switch: `PPO_PLATFORM_FAST_PATHS=0`, an uncovered version or a
missing private
name runs stock SB3 and torch end to end, said once; a model saved either way loads either way."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.policies import ActorCriticPolicy

from ppo_platform.trainers.fast import ENV_VAR, fast_paths, privates, switch
from ppo_platform.trainers.fast.policy import FastActorCriticPolicy
from ppo_platform.trainers.ppo import PlatformPPO
from tests.trainers_tests.trainer_rollouts import train_seeded, with_rollout


@pytest.fixture
def fresh_gate() -> Iterator[None]:
    """The gate and the private names checked anew, and again after the test."""
    switch._gate.cache_clear()
    privates.missing.cache_clear()
    yield
    switch._gate.cache_clear()
    privates.missing.cache_clear()


def model(seed: int = 0) -> PlatformPPO:
    env = make_vec_env("CartPole-v1", n_envs=2, seed=seed)
    return PlatformPPO("MlpPolicy", env, n_steps=64, batch_size=32, seed=seed, device="cpu")


def test_on_by_default_on_the_covered_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert fast_paths().describe() == "on"
    ours = model()
    assert ours.fast_paths.on and type(ours.policy) is FastActorCriticPolicy


def test_zero_runs_stock_sb3_and_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "0")
    ours = model()
    assert ours.fast_paths.describe() == f"off ({ENV_VAR}=0)"
    assert type(ours.policy) is ActorCriticPolicy
    assert ours.policy.optimizer.param_groups[0]["foreach"] is None  # torch's default
    assert "zero_grad" not in vars(ours.policy.optimizer)  # torch's own optimizer methods


def test_a_value_neither_on_nor_off_is_refused_naming_the_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ENV_VAR, "fast")
    with pytest.raises(ValueError, match=f"{ENV_VAR}=.fast. is neither on nor off: set it to 1"):
        fast_paths()


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_with_them_off_an_update_is_stock_ppos_bit_for_bit(
    env_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_VAR, "0")
    stock = with_rollout(PPO, env_id, seed=3, n_steps=64, batch_size=32, n_epochs=2)
    ours = with_rollout(PlatformPPO, env_id, seed=3, n_steps=64, batch_size=32, n_epochs=2)
    train_seeded(stock)
    train_seeded(ours)
    for name, value in stock.policy.state_dict().items():
        assert torch.equal(ours.policy.state_dict()[name], value), name


def test_outside_the_covered_versions_the_stock_path_runs_and_says_so_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, fresh_gate: None
) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setattr(switch, "COVERED_TORCH", ("2.99.0",))
    with caplog.at_level(logging.WARNING, logger="ppo_platform.trainers.fast"):
        first, second = fast_paths(), fast_paths()
        ours = model()
    assert not first.on and first == second == ours.fast_paths.paths
    assert f"torch {torch.__version__.split('+')[0]} with stable-baselines3" in first.reason
    assert "outside the versions the equality tests cover (torch 2.99.0" in first.reason
    assert [r.getMessage() for r in caplog.records].count(
        f"fast paths off, stock stable-baselines3 and torch run: {first.reason}"
    ) == 1
    assert type(ours.policy) is ActorCriticPolicy


def test_a_missing_private_name_runs_the_stock_path(
    monkeypatch: pytest.MonkeyPatch, fresh_gate: None
) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    renamed = ("torch.optim.adam", "_multi_tensor_adam_renamed")
    monkeypatch.setattr(privates, "NAMES", (*privates.NAMES, renamed))
    paths = fast_paths()
    assert not paths.on
    assert paths.reason.startswith("torch.optim.adam._multi_tensor_adam_renamed is not available")


def test_a_model_saved_with_them_on_loads_with_them_off_and_back(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    ours = model()
    ours.learn(128)
    ours.save(tmp_path / "on.zip")
    assert type(ours.policy) is FastActorCriticPolicy  # saving changed nothing in the model
    monkeypatch.setenv(ENV_VAR, "0")
    stock = PlatformPPO.load(tmp_path / "on.zip", device="cpu")
    assert type(stock.policy) is ActorCriticPolicy
    stock.save(tmp_path / "off.zip")
    monkeypatch.delenv(ENV_VAR)
    again = PlatformPPO.load(tmp_path / "off.zip", device="cpu")
    assert type(again.policy) is FastActorCriticPolicy
    for name, value in ours.policy.state_dict().items():
        assert torch.equal(again.policy.state_dict()[name], value), name
