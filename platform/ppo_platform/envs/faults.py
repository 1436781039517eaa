"""An environment's own exception, kept as data on its way to the run (docs/guides/
your-own-environment.md, "When the env raises").

`CatchEnvFaults` is the outermost wrapper of every env the factory builds, in whichever process
it runs (this one, or a subprocess vector env's child). When the env's `step` or `reset` raises,
it does not let the exception kill that process: the step ends the episode and its info carries
the fault (type, message, traceback) under `FAULT_KEY`; the env is not touched again.
`RaiseEnvFaults`, around the vector env in the training process, turns that
info (or an exception a native vector env such as EnvPool raises itself) into `EnvCrashError`.
"""

from __future__ import annotations

import traceback
from typing import Any

import gymnasium
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper

from ppo_platform.errors import EnvCrashError

FAULT_KEY = "ppo_platform.env_fault"


def fault_of(error: BaseException) -> dict[str, str]:
    """The exception as plain data: its type's qualified name, message and traceback."""
    kind = type(error)
    module = kind.__module__
    name = (
        kind.__qualname__ if module in ("builtins", "__main__") else f"{module}.{kind.__qualname__}"
    )
    return {
        "type": name,
        "message": str(error),
        "traceback": "".join(traceback.format_exception(error)),
    }


class CatchEnvFaults(gymnasium.Wrapper):  # type: ignore[type-arg]
    """The env's exception becomes a terminal step whose info carries it (see the module)."""

    def __init__(self, env: gymnasium.Env) -> None:  # type: ignore[type-arg]
        super().__init__(env)
        self.fault: dict[str, str] | None = None
        self._last_obs: Any = None

    def _placeholder(self) -> Any:
        return self._last_obs if self._last_obs is not None else self.observation_space.sample()

    def step(self, action: Any) -> Any:
        if self.fault is None:
            try:
                observation, reward, terminated, truncated, info = self.env.step(action)
            except Exception as error:
                self.fault = fault_of(error)
            else:
                self._last_obs = observation
                return observation, reward, terminated, truncated, info
        return self._placeholder(), 0.0, True, False, {FAULT_KEY: self.fault}

    def reset(self, **kwargs: Any) -> Any:
        if self.fault is None:
            try:
                observation, info = self.env.reset(**kwargs)
            except Exception as error:
                self.fault = fault_of(error)
            else:
                self._last_obs = observation
                return observation, info
        return self._placeholder(), {FAULT_KEY: self.fault}


FRAME_KEY = "ppo_platform.frame"


class KeepFrames(gymnasium.Wrapper):  # type: ignore[type-arg]
    """Films: every step's info carries the frame rendered right after it, so the episode's
    terminal frame is kept (a vector env resets the env before anyone else could render it)."""

    def step(self, action: Any) -> Any:
        observation, reward, terminated, truncated, info = self.env.step(action)
        return observation, reward, terminated, truncated, {**info, FRAME_KEY: self.env.render()}


class RaiseEnvFaults(VecEnvWrapper):
    """Raises `EnvCrashError` for the first env whose fault a step or reset reports.

    `raises_own`: the vector env runs the env's code in this process and raises its exceptions
    itself (gymnasium's native vector envs, EnvPool); they are the env's own too."""

    def __init__(self, venv: VecEnv, env_id: str, raises_own: bool = False) -> None:
        super().__init__(venv)
        self.env_id, self.raises_own = env_id, raises_own

    def _raise_reported(self, infos: Any) -> None:
        for index, info in enumerate(infos or ()):
            fault = info.get(FAULT_KEY) if isinstance(info, dict) else None
            if fault is not None:
                raise EnvCrashError(
                    self.env_id,
                    fault["type"],
                    fault["message"],
                    env_index=index,
                    traceback_text=fault["traceback"],
                )

    def _own(self, error: Exception) -> EnvCrashError:
        fault = fault_of(error)
        return EnvCrashError(
            self.env_id, fault["type"], fault["message"], traceback_text=fault["traceback"]
        )

    def reset(self) -> Any:
        try:
            observation = self.venv.reset()
        except Exception as error:
            if not self.raises_own:
                raise
            raise self._own(error) from error
        self._raise_reported(getattr(self.venv, "reset_infos", ()))
        return observation

    def step_wait(self) -> Any:
        try:
            observation, rewards, dones, infos = self.venv.step_wait()
        except Exception as error:
            if not self.raises_own:
                raise
            raise self._own(error) from error
        self._raise_reported(infos)
        return observation, rewards, dones, infos
