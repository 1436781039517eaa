"""`env.vectorization`: what auto resolves to, the refusals (field, value, fix; exit 2 / 422),
evaluation built like training, and native CartPole learning as the per-env envs do."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.vec_env import DummyVecEnv
from typer.testing import CliRunner

from ppo_platform.cli import app
from ppo_platform.envs import envpool_support
from ppo_platform.envs.build import build_eval_env, build_train_env
from ppo_platform.envs.vector import NativeVecEnv
from ppo_platform.envs.vectorization import resolve, vectorization_issues
from ppo_platform.errors import SpecError
from ppo_platform.spec.loader import load_spec_text
from ppo_platform.training.algorithms import build_model

CARTPOLE = """
name: vec
env: {{id: {env}, n_envs: 4, vectorization: {mode}{extra}}}
rollout: {{n_steps: 32}}
update: {{epochs: 4, minibatch_size: 128, learning_rate: 1.0e-3}}
advantage: {{gamma: 0.98, gae_lambda: 0.8}}
budget: {{total_timesteps: {steps}, seed: {seed}}}
evaluation: {{every_timesteps: 0, episodes: 4}}
"""


def spec(env: str = "CartPole-v1", mode: str = "auto", extra: str = "", **kw: Any) -> Any:
    text = CARTPOLE.format(
        env=env, mode=mode, extra=extra, steps=kw.get("steps", 2048), seed=kw.get("seed", 0)
    )
    return load_spec_text(text)


def test_auto_is_native_for_cartpole_and_dummy_where_nothing_native_fits() -> None:
    assert resolve(spec()) == "native"
    assert resolve(spec(extra=", wrappers: [{name: frame_stack, n: 2}]")) == "native"
    # EnvPool runs CartPole, but not with a per-env wrapper.
    assert resolve(spec(extra=", wrappers: [{name: time_limit, max_episode_steps: 50}]")) == "dummy"
    assert resolve(spec(), own_env=True) == "dummy"
    assert resolve(spec("Pendulum-v1")) == "dummy"  # EnvPool only when asked for


@pytest.mark.parametrize(
    ("env", "mode", "extra", "reason"),
    [
        ("Pendulum-v1", "native", "", "has no native vector env"),
        ("CartPole-v1", "native", ", wrappers: [flatten_observation]", "per-env wrappers"),
        ("CartPole-v1", "native", ", kwargs: {gravity: 3.0}", "takes no gravity"),
    ],
)
def test_native_where_it_cannot_run_is_refused_naming_field_value_and_fix(
    env: str, mode: str, extra: str, reason: str
) -> None:
    [issue] = vectorization_issues(spec(env, mode, extra))
    assert (issue.path, issue.value) == ("env.vectorization", mode)
    assert reason in issue.message and "dummy" in (issue.fix or "")


def test_envpool_without_the_extra_is_refused_with_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(envpool_support, "installed", lambda: False)  # as where it is not
    [issue] = vectorization_issues(spec(mode="envpool"))
    assert "not installed" in issue.message
    assert "pip install 'ppo-platform[envpool]'" in (issue.fix or "")


def test_validate_exits_2_on_a_refused_vectorization(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "spec.yaml"
    path.write_text(CARTPOLE.format(env="Pendulum-v1", mode="native", extra="", steps=2048, seed=0))
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    assert "env.vectorization = 'native'" in result.stderr
    assert "has no native vector env" in result.stderr
    with pytest.raises(SpecError, match=r"env\.vectorization"):
        build_train_env(spec("Pendulum-v1", "native"))


def test_the_service_refuses_it_as_validate_does() -> None:
    """The REST API's intake (a SpecError there is a 422 naming the same field)."""
    from ppo_platform.jobs.intake import parse_spec

    text = CARTPOLE.format(env="Pendulum-v1", mode="native", extra="", steps=2048, seed=0)
    with pytest.raises(SpecError) as refused:
        parse_spec(text)
    assert [(i.path, i.value) for i in refused.value.issues] == [("env.vectorization", "native")]


def test_native_training_evaluates_per_env_with_the_same_spaces() -> None:
    """Eval env i plays what one env seeded seed + i plays (test_evaluation.py), natively too."""
    cartpole = spec(extra=", normalize: {obs: true}")
    train, evaluation = build_train_env(cartpole), build_eval_env(cartpole)
    try:
        assert isinstance(train.unwrapped, NativeVecEnv)
        assert isinstance(evaluation.unwrapped, DummyVecEnv)
        assert evaluation.num_envs == 4
        assert train.observation_space == evaluation.observation_space
        assert train.action_space == evaluation.action_space
    finally:
        train.close()
        evaluation.close()


def _final_returns(mode: str, seed: int) -> float:
    """Mean return of the last 20 training episodes of an 8k-step CartPole run (~2 s)."""
    cartpole = spec(mode=mode, steps=8192, seed=seed)
    env = build_train_env(cartpole)
    model = build_model(cartpole, env)
    model.learn(cartpole.budget.total_timesteps)
    env.close()
    return float(np.mean([info["r"] for info in list(model.ep_info_buffer)[-20:]]))


@pytest.mark.slow
def test_native_cartpole_learns_like_per_env_cartpoles_on_the_same_seeds() -> None:
    native = [_final_returns("native", seed) for seed in range(3)]
    dummy = [_final_returns("dummy", seed) for seed in range(3)]
    # Random play lasts ~22 steps; both learn well past it (60-185 on these seeds)...
    assert min(native) > 40 and min(dummy) > 40
    # ...and their means differ by no more than the seeds' own spread.
    spread = max(np.std(native), np.std(dummy), 10.0)
    assert abs(np.mean(native) - np.mean(dummy)) < 3 * spread, (native, dummy)


class _WithFlag(gym.ObservationWrapper):  # type: ignore[type-arg]
    """CartPole's observation as a Dict with a discrete part: {"pole": Box, "flag": Discrete}."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.observation_space = gym.spaces.Dict(
            {"pole": env.observation_space, "flag": gym.spaces.Discrete(2)}
        )

    def observation(self, observation: Any) -> dict[str, Any]:
        return {"pole": observation, "flag": int(observation[0] > 0)}


def test_normalize_obs_scales_the_box_part_of_a_dict_and_refuses_discrete_only() -> None:
    cartpole = spec(mode="dummy", extra=", normalize: {obs: true}")
    env = build_train_env(cartpole, make_env=lambda: _WithFlag(gym.make("CartPole-v1")))
    try:
        assert env.norm_obs_keys == ["pole"]
        obs = env.reset()
        assert set(obs) == {"pole", "flag"} and set(np.unique(obs["flag"])) <= {0, 1}
    finally:
        env.close()
    with pytest.raises(SpecError) as refused:
        build_train_env(spec("FrozenLake-v1", "dummy", ", normalize: {obs: true}"))
    [issue] = refused.value.issues
    assert (issue.path, issue.value) == ("env.normalize.obs", True)
    assert "env.normalize.obs: false" in (issue.fix or "")
