"""Contract of the lesson GridWorld: API conformance, reward rule, dynamics, validation."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gymnasium_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

from ppo_platform.envs.own import ACTION_NAMES, GRIDWORLD_ID, GridWorldEnv, register_envs

UP, RIGHT, DOWN, LEFT = (ACTION_NAMES.index(name) for name in ("up", "right", "down", "left"))


def run(env: GridWorldEnv, actions: list[int]) -> tuple[float, list[tuple[int, int]], bool]:
    """Play ``actions`` from a fresh reset; return total reward, positions, terminated."""
    env.reset(seed=0)
    total, positions, terminated = 0.0, [], False
    for action in actions:
        _, reward, terminated, _, info = env.step(action)
        total += reward
        positions.append(info["position"])
    return total, positions, terminated


def test_passes_gymnasium_env_checker() -> None:
    # Built through make() so the checker can also exercise the render modes via the spec.
    gymnasium_check_env(gymnasium.make(GRIDWORLD_ID, slip_probability=0.2).unwrapped)


def test_passes_sb3_env_checker() -> None:
    sb3_check_env(GridWorldEnv(), warn=True)


def test_make_by_id_after_import_and_registration_is_idempotent() -> None:
    register_envs()
    env = gymnasium.make(GRIDWORLD_ID, size=5)
    observation, info = env.reset(seed=0)
    assert observation.shape == (25,) and observation[0] == 1.0
    assert info == {"position": (0, 0)}
    assert isinstance(env.unwrapped, GridWorldEnv)


@pytest.mark.parametrize("size", [2, 4, 6])
def test_optimal_path_takes_2_size_minus_1_steps_with_exact_return(size: int) -> None:
    env = GridWorldEnv(size=size, step_penalty=-0.01, goal_reward=1.0)
    actions = [RIGHT] * (size - 1) + [DOWN] * (size - 1)
    total, positions, terminated = run(env, actions)
    assert terminated and len(positions) == 2 * (size - 1)
    assert positions[-1] == (size - 1, size - 1)
    assert total == pytest.approx(1.0 + -0.01 * (2 * (size - 1) - 1))


def test_goal_observation_is_one_hot_of_last_cell() -> None:
    env = GridWorldEnv(size=3)
    env.reset(seed=0)
    for action in (RIGHT, RIGHT, DOWN):
        env.step(action)
    observation, reward, terminated, truncated, _ = env.step(DOWN)
    assert observation.dtype == np.float32
    assert np.array_equal(observation, np.eye(9, dtype=np.float32)[8])
    assert (reward, terminated, truncated) == (1.0, True, False)


def test_moving_into_a_wall_keeps_position_and_costs_the_penalty() -> None:
    env = GridWorldEnv(step_penalty=-0.5)
    total, positions, terminated = run(env, [UP, LEFT])
    assert positions == [(0, 0), (0, 0)]
    assert total == pytest.approx(-1.0) and not terminated


def test_truncates_exactly_at_max_episode_steps() -> None:
    env = GridWorldEnv(max_episode_steps=3)
    env.reset(seed=0)
    flags = [env.step(UP)[2:4] for _ in range(3)]
    assert flags == [(False, False), (False, False), (False, True)]


def test_slip_is_reproducible_under_the_same_seed_and_happens() -> None:
    env = GridWorldEnv(size=6, slip_probability=0.5, max_episode_steps=200)
    first = run(env, [RIGHT] * 40)[1]
    second = run(env, [RIGHT] * 40)[1]
    assert first == second
    # Without slips the agent would only ever move right along row 0.
    assert any(row != 0 for row, _ in first)


def test_no_slip_by_default_is_deterministic() -> None:
    positions = run(GridWorldEnv(), [RIGHT, RIGHT, DOWN])[1]
    assert positions == [(0, 1), (0, 2), (1, 2)]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"size": 1}, "size must be >= 2, got 1"),
        ({"slip_probability": 1.0}, r"slip_probability must be in \[0, 1\), got 1.0"),
        ({"slip_probability": -0.1}, r"slip_probability must be in \[0, 1\), got -0.1"),
        ({"max_episode_steps": 0}, "max_episode_steps must be >= 1, got 0"),
        ({"render_mode": "human"}, "render_mode must be None or one of"),
    ],
)
def test_bad_constructor_args_raise_naming_the_argument(
    kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        GridWorldEnv(**kwargs)


def test_ansi_render_shows_agent_and_goal() -> None:
    env = GridWorldEnv(size=3, render_mode="ansi")
    env.reset(seed=0)
    assert env.render() == "A . .\n. . .\n. . G\n"
    env.step(DOWN)
    assert env.render() == ". . .\nA . .\n. . G\n"
