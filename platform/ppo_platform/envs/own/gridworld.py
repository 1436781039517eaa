"""A small GridWorld for the PPO-vs-A2C lesson exercise (exercise 1 of
docs/guides/lesson-exercises.md).

The agent starts in the top-left cell and must reach the bottom-right goal. Reward rule:
every step that does not reach the goal earns ``step_penalty``; the step that reaches the goal
earns ``goal_reward`` instead (no penalty on that step) and terminates the episode. So the
optimal return on an ``size`` x ``size`` grid is
``goal_reward + step_penalty * (2 * (size - 1) - 1)``.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from numpy.typing import NDArray

ACTION_NAMES: tuple[str, ...] = ("up", "right", "down", "left")
"""Meaning of each discrete action, by index."""

_MOVES: tuple[tuple[int, int], ...] = ((-1, 0), (0, 1), (1, 0), (0, -1))


class GridWorldEnv(gymnasium.Env[NDArray[np.float32], np.int64]):
    """``size`` x ``size`` grid with a one-hot observation of the agent's cell."""

    # gymnasium.Env declares metadata as an instance attribute, so it cannot be a ClassVar.
    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 4}  # noqa: RUF012

    def __init__(
        self,
        *,
        size: int = 4,
        max_episode_steps: int = 50,
        slip_probability: float = 0.0,
        step_penalty: float = -0.01,
        goal_reward: float = 1.0,
        render_mode: str | None = None,
    ) -> None:
        if size < 2:
            raise ValueError(f"size must be >= 2, got {size}")
        if max_episode_steps < 1:
            raise ValueError(f"max_episode_steps must be >= 1, got {max_episode_steps}")
        if not 0.0 <= slip_probability < 1.0:
            raise ValueError(f"slip_probability must be in [0, 1), got {slip_probability}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be None or one of {self.metadata['render_modes']}, "
                f"got {render_mode!r}"
            )
        self.size = size
        self.max_episode_steps = max_episode_steps
        self.slip_probability = slip_probability
        self.step_penalty = step_penalty
        self.goal_reward = goal_reward
        self.render_mode = render_mode
        self.goal = (size - 1, size - 1)
        self.observation_space = spaces.Box(0.0, 1.0, (size * size,), dtype=np.float32)
        self.action_space = spaces.Discrete(len(ACTION_NAMES))
        self._position = (0, 0)
        self._steps = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[NDArray[np.float32], dict[str, Any]]:
        """Put the agent back on (0, 0); ``seed`` reseeds the slip RNG."""
        super().reset(seed=seed)
        self._position = (0, 0)
        self._steps = 0
        return self._observation(), self._info()

    def step(
        self, action: int | np.int64
    ) -> tuple[NDArray[np.float32], float, bool, bool, dict[str, Any]]:
        """Move one cell (or slip to a random action); walls keep the position.

        Reaching the goal on the last allowed step counts as terminated, not truncated.
        """
        if not self.action_space.contains(action):
            raise ValueError(f"action must be in [0, {len(ACTION_NAMES)}), got {action!r}")
        if self.slip_probability > 0.0 and self.np_random.random() < self.slip_probability:
            action = int(self.np_random.integers(len(ACTION_NAMES)))
        d_row, d_col = _MOVES[int(action)]
        row = min(max(self._position[0] + d_row, 0), self.size - 1)
        col = min(max(self._position[1] + d_col, 0), self.size - 1)
        self._position = (row, col)
        self._steps += 1
        terminated = self._position == self.goal
        truncated = not terminated and self._steps >= self.max_episode_steps
        reward = self.goal_reward if terminated else self.step_penalty
        return self._observation(), float(reward), terminated, truncated, self._info()

    def render(self) -> str | None:
        """Text grid for ``render_mode="ansi"``: ``A`` agent, ``G`` goal, ``.`` empty."""
        if self.render_mode != "ansi":
            return None
        rows = []
        for row in range(self.size):
            cells = []
            for col in range(self.size):
                cell = (row, col)
                cells.append("A" if cell == self._position else "G" if cell == self.goal else ".")
            rows.append(" ".join(cells))
        return "\n".join(rows) + "\n"

    def _observation(self) -> NDArray[np.float32]:
        observation = np.zeros(self.size * self.size, dtype=np.float32)
        observation[self._position[0] * self.size + self._position[1]] = 1.0
        return observation

    def _info(self) -> dict[str, Any]:
        return {"position": self._position}
