"""Tasks for the nested-cancel test: a parent that runs one member on Ray (a sweep job of one
member, as a job's worker runs it) and a member that takes seconds to close, as a training run
closes its MLflow run and saves a checkpoint. Pickled by value (the Ray workers cannot import
the tests), so they import only the platform and the standard library."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from ppo_platform.execution import signals
from ppo_platform.execution.base import Task
from ppo_platform.execution.local import run_tasks
from ppo_platform.execution.ray_executor import RayExecutor

CLOSE_SECONDS = 3.0


def member_that_closes_slowly(folder: str) -> None:
    (Path(folder) / "member-started").touch()
    try:
        time.sleep(300)
    except KeyboardInterrupt:
        (Path(folder) / "member-interrupted").touch()
        time.sleep(CLOSE_SECONDS)  # closing its run
        (Path(folder) / "member-closed").write_text(str(time.time()))
        raise


def parent_of_one_member(address: str, folder: str) -> Any:
    (Path(folder) / "parent-pid").write_text(str(os.getpid()))
    try:
        return run_tasks(
            [Task("member", member_that_closes_slowly, (folder,))], executor=RayExecutor(address)
        )
    finally:
        (Path(folder) / "parent-ended").write_text(f"{time.time()} {signals.received()}")
