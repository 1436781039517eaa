"""The planner's reward probe and the time-penalty rule: from the env's rewards, never its name."""

from __future__ import annotations

import importlib.util

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces

from ppo_platform.envs.ids import usable_env
from ppo_platform.planner import plan_experiment
from ppo_platform.planner.reward_probe import (
    MIN_STEPS,
    PENALTY_GAMMA,
    penalty_rollout_steps,
    probe_rewards,
    time_penalty,
)

PENALTY_ENV_ID = "ppo_platform_test/ReachTheLine-v0"  # a time-penalty task under a new name
BONUS_ENV_ID = "ppo_platform_test/StayAlive-v0"  # the same task paying +1 per step


class LineEnv(gymnasium.Env):
    """Walk right along a line of 40 cells to the goal; `step_reward` on every other step."""

    def __init__(self, step_reward: float = -1.0, render_mode: str | None = None) -> None:
        self.observation_space = spaces.Box(0.0, 1.0, (1,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self.step_reward = step_reward
        self.position = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.position = 0
        return np.zeros(1, dtype=np.float32), {}

    def step(self, action):
        self.position = max(0, self.position + (1 if action == 1 else -1))
        at_goal = self.position >= 40
        observation = np.array([self.position / 40], dtype=np.float32)
        return observation, 0.0 if at_goal else self.step_reward, at_goal, False, {}


for env_id, reward in ((PENALTY_ENV_ID, -1.0), (BONUS_ENV_ID, 1.0)):
    if env_id not in gymnasium.registry:
        gymnasium.register(
            env_id,
            entry_point=LineEnv,
            max_episode_steps=500,
            kwargs={"step_reward": reward},
        )


def test_time_penalty_is_one_negative_reward_on_every_step():
    assert time_penalty([-1.0] * MIN_STEPS) == -1.0
    assert time_penalty([-0.01] * 200) == -0.01


@pytest.mark.parametrize(
    "rewards",
    [
        [1.0] * 200,  # a survival bonus: the episode's end is the failure
        [0.0] * 200,  # nothing paid: no structure to plan from
        [-1.0] * 199 + [-0.5],  # rewards that vary (a shaped or action-dependent reward)
        [-1.0] * (MIN_STEPS - 1),  # too few steps to say
        [float("-inf")] * 200,
    ],
)
def test_anything_else_is_not_a_time_penalty(rewards):
    assert time_penalty(rewards) is None


@pytest.mark.parametrize(
    ("env_id", "penalty"),
    [
        ("Acrobot-v1", -1.0),  # -1 until the tip swings above the line
        ("MountainCar-v0", -1.0),  # -1 until the car reaches the flag
        ("ppo_platform/GridWorld-v0", -0.01),  # our GridWorld's step_penalty
        ("CartPole-v1", None),  # +1 per step survived
        ("Pendulum-v1", None),  # a cost that depends on the angle and the torque
        ("MountainCarContinuous-v0", None),  # -0.1 * action^2: varies with the action
    ],
)
def test_probe_reads_the_reward_structure_of_real_envs(env_id, penalty):
    with usable_env(env_id) as env:  # registers our own envs (GridWorld) as run does
        # A deadline far beyond 1,000 steps: on a loaded machine 0.5 s may end the probe early.
        probe = probe_rewards(env, seconds=60.0)
    assert probe.step_penalty == penalty
    assert probe.steps == 1_000


@pytest.mark.skipif(importlib.util.find_spec("Box2D") is None, reason="the box2d extra")
def test_probe_sees_lunar_landers_shaped_reward_as_no_time_penalty():
    with usable_env("LunarLander-v3") as env:
        assert probe_rewards(env).step_penalty is None


def test_probe_of_an_env_that_fails_mid_play_gives_no_verdict():
    class Failing(LineEnv):
        def step(self, action):
            raise RuntimeError("the simulator crashed")

    probe = probe_rewards(Failing())
    assert (probe.step_penalty, probe.steps) == (None, 0)


def test_penalty_rollout_fits_six_gae_spans():
    span = 1 / (1 - PENALTY_GAMMA * 0.95)  # 16.8 steps
    assert penalty_rollout_steps() == 128
    assert 6 * span <= 128 < 2 * 6 * span


def test_a_time_penalty_plans_the_same_for_any_name():
    """The rule follows the probed reward: a new env with -1 per step plans like Acrobot-v1."""
    ours = plan_experiment(PENALTY_ENV_ID, 100_000).spec
    acrobot = plan_experiment("Acrobot-v1", 100_000).spec
    for spec in (ours, acrobot):
        assert (spec.env.n_envs, spec.rollout.n_steps, spec.update.epochs) == (8, 128, 5)
        assert (spec.advantage.gamma, spec.advantage.gae_lambda) == (0.99, 0.95)
        assert spec.env.normalize.reward is True


def test_the_same_env_paying_a_bonus_keeps_the_horizon_rule():
    spec = plan_experiment(BONUS_ENV_ID, 100_000).spec  # 500-step limit: gamma 1 - 10/500
    assert (spec.rollout.n_steps, spec.advantage.gamma, spec.advantage.gae_lambda) == (
        32,
        0.98,
        0.8,
    )
    assert spec.env.normalize.reward is False


@pytest.mark.parametrize(
    ("env_id", "budget", "expected"),
    [
        # unchanged by the rule: the rows of the sample-efficiency table that were not re-run
        ("CartPole-v1", 100_000, (8, 32, 20, 0.98, 0.8, False, False)),
        ("Pendulum-v1", 100_000, (4, 256, 10, 0.95, 0.95, False, False)),
        ("MountainCarContinuous-v0", 20_000, (4, 64, 10, 0.99, 0.95, True, True)),
    ],
)
def test_envs_without_a_time_penalty_plan_as_before(env_id, budget, expected):
    spec = plan_experiment(env_id, budget).spec
    got = (
        spec.env.n_envs,
        spec.rollout.n_steps,
        spec.update.epochs,
        spec.advantage.gamma,
        spec.advantage.gae_lambda,
        spec.env.normalize.obs,
        spec.env.normalize.reward,
    )
    assert got == expected


def test_plan_says_why_in_the_reasons():
    plan = plan_experiment("MountainCar-v0", 100_000)
    reasons = plan.reasons
    assert "time penalty" in reasons["advantage.gamma"]
    assert "raised to T = 128" in reasons["rollout.n_steps"]
    assert "-1 / (1 - gamma) = -100" in reasons["env.normalize.reward"]


def test_a_small_budget_keeps_the_short_rollout():
    """T = 128 would leave fewer than ~50 updates at 20k steps: T stays, gamma still 0.99."""
    spec = plan_experiment("Acrobot-v1", 20_000).spec
    assert (spec.rollout.n_steps, spec.advantage.gamma) == (16, 0.99)
