"""An environment that fails on purpose after a few steps, to test how failures are handled.

`mode="raise"` raises RuntimeError from `step`; `mode="kill"` ends its own process with SIGKILL
(what a segfault or the OOM killer looks like from outside).
"""

from __future__ import annotations

import os
import signal
from typing import Any, Literal

import gymnasium
import numpy as np
from gymnasium import spaces


class CrashEnv(gymnasium.Env[np.ndarray, int]):
    """A one-number observation, two actions, and a crash at step `crash_after`."""

    def __init__(
        self,
        mode: Literal["raise", "kill"] = "raise",
        crash_after: int = 50,
        render_mode: str | None = None,
    ) -> None:
        if mode not in ("raise", "kill"):
            raise ValueError(f"mode must be 'raise' or 'kill', got {mode!r}")
        self.mode, self.crash_after, self.render_mode = mode, crash_after, render_mode
        self.observation_space = spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)  # type: ignore[assignment]
        self._steps = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        return np.zeros(1, dtype=np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self._steps += 1
        if self._steps >= self.crash_after:
            if self.mode == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            raise RuntimeError(f"CrashTest env crashed on purpose at step {self._steps}")
        return np.zeros(1, dtype=np.float32), 0.0, False, self._steps % 10 == 0, {}
