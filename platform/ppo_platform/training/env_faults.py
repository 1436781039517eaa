"""An env's own exception in the training process: raised as `EnvCrashError` by the vector env's
outermost wrapper, then recorded on the run (its traceback saved in the run folder and logged,
its type and message as separate tags) before the run closes FAILED (docs/guides/
your-own-environment.md, "When the env raises")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper

from ppo_platform.envs.faults import FAULT_KEY, fault_of
from ppo_platform.errors import EnvCrashError
from ppo_platform.tracking import tags as tag

TRACEBACK_FILE = "env_error.txt"


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


def failure_tags(error: EnvCrashError) -> dict[str, str]:
    """The run's failure tags: the one-line reason and each field apart (what the diagnosis
    and the dashboard read without parsing text)."""
    tags = {
        tag.OUTCOME: "failed",
        tag.FAILURE: f"{error.short_type}: {error.exception_message}",
        tag.FAILURE_SOURCE: "env",
        tag.FAILURE_KIND: "env_crash",
        tag.FAILURE_TYPE: error.exception_type,
        tag.FAILURE_MESSAGE: error.exception_message[:5000],
        tag.FAILURE_ENV_ID: error.env_id,
    }
    if error.step is not None:
        tags[tag.FAILURE_STEP] = str(error.step)
    if error.traceback_path:
        tags[tag.FAILURE_TRACEBACK] = error.traceback_path
    return tags


def record_env_crash(tracker: Any, error: EnvCrashError, step: int) -> EnvCrashError:
    """Save the traceback in the run folder (and as an artifact), close the run FAILED with
    the crash's tags; the error to raise, with its step and traceback path."""
    path: Path | None = None
    try:
        path = Path(tracker.run_dir) / TRACEBACK_FILE
        path.write_text(
            error.traceback_text or f"{error.exception_type}: {error.exception_message}\n"
        )
    except OSError:
        path = None
    crashed = EnvCrashError(
        error.env_id,
        error.exception_type,
        error.exception_message,
        step=step,
        env_index=error.env_index,
        traceback_text=error.traceback_text,
        traceback_path=str(path) if path else None,
    )
    if path is not None:
        tracker.log_artifact(path)
    tracker.finish("FAILED", failure_tags(crashed))
    return crashed
