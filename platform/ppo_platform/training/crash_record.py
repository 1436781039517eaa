"""An env's own exception in the training process: raised as `EnvCrashError` by the vector env's
outermost wrapper (`envs.faults.RaiseEnvFaults`), then recorded on the run (its traceback saved
in the run folder and logged, its type and message as separate tags) before the run closes
FAILED (docs/guides/your-own-environment.md, "When the env raises")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ppo_platform.errors import EnvCrashError
from ppo_platform.tracking import tags as tag

TRACEBACK_FILE = "env_error.txt"


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
