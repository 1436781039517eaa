"""EnvPool through `env.vectorization`: SB3's conventions on its CartPole, and an ALE game whose
observations are what the `atari` wrapper path gives (84x84, 4 frames, channels first)."""

from __future__ import annotations

import numpy as np
import pytest

from ppo_platform.envs import envpool_support
from ppo_platform.envs.build import build_eval_env, build_train_env
from ppo_platform.envs.envpool_vec import EnvPoolVecEnv
from ppo_platform.envs.vectorization import resolve, vectorization_issues
from ppo_platform.spec.loader import load_spec_text

pytestmark = pytest.mark.skipif(
    not envpool_support.installed(), reason="EnvPool is not installed (the envpool extra)"
)

PONG = """
name: pong
env:
  id: ALE/Pong-v5
  n_envs: 2
  vectorization: {mode}
  kwargs: {{frameskip: 1, repeat_action_probability: 0.0}}
  wrappers: [atari, {{name: frame_stack, n: 4}}]
evaluation: {{every_timesteps: 0, episodes: 2}}
"""


def test_envpool_cartpole_returns_reset_observations_and_monitor_statistics() -> None:
    spec = load_spec_text("name: c\nenv: {id: CartPole-v1, n_envs: 4, vectorization: envpool}\n")
    env = build_train_env(spec)
    assert isinstance(env.unwrapped, EnvPoolVecEnv)  # under the env-fault wrapper
    env.seed(3)
    env.reset()
    rng = np.random.default_rng(0)
    lengths = []
    for _ in range(300):
        obs, _, dones, infos = env.step(rng.integers(0, 2, 4))
        for i in np.flatnonzero(dones):
            assert np.all(np.abs(obs[i]) <= 0.05)  # the next episode's first observation
            terminal = infos[i]["terminal_observation"]
            assert abs(terminal[2]) > 0.2094 or abs(terminal[0]) > 2.4
            lengths.append(infos[i]["episode"]["l"])
            assert infos[i]["episode"]["r"] == float(infos[i]["episode"]["l"])
    env.close()
    assert len(lengths) > 40 and 15 < np.mean(lengths) < 30  # random play: ~22 steps


def test_pong_through_envpool_sees_what_the_atari_wrapper_path_sees() -> None:
    pooled = load_spec_text(PONG.format(mode="auto"))
    assert resolve(pooled) == "envpool"  # auto picks EnvPool for ALE games
    per_env = load_spec_text(PONG.format(mode="dummy"))
    fast, slow = build_train_env(pooled), build_train_env(per_env)
    evaluation = build_eval_env(pooled)
    try:
        assert fast.observation_space == slow.observation_space == evaluation.observation_space
        assert fast.observation_space.shape == (4, 84, 84)
        assert fast.action_space == slow.action_space
        fast.seed(0)
        assert fast.reset().shape == (2, 4, 84, 84)
    finally:
        for env in (fast, slow, evaluation):
            env.close()


def test_what_envpool_cannot_express_is_refused() -> None:
    text = PONG.format(mode="envpool").replace("[atari,", "[atari, grayscale,")
    [issue] = vectorization_issues(load_spec_text(text))
    assert (issue.path, issue.value) == ("env.vectorization", "envpool")
    assert "atari wrapper's preprocessing" in issue.message
    double = PONG.format(mode="envpool").replace("frameskip: 1, ", "")
    [issue] = vectorization_issues(load_spec_text(double))
    assert "skipped twice" in issue.message


@pytest.mark.parametrize(("n_envs", "expected"), [(4, "envpool"), (1, "dummy")])
def test_auto_picks_envpool_for_mujoco_only_with_several_envs(n_envs: int, expected: str) -> None:
    pytest.importorskip("mujoco")
    spec = load_spec_text(f"name: m\nenv: {{id: HalfCheetah-v5, n_envs: {n_envs}}}\n")
    assert resolve(spec) == expected  # one env: EnvPool's thread hand-off costs more than it saves
