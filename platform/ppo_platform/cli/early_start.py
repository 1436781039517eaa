"""`ppo-platform run` and `sweep` start their tracking process before the CLI imports its
commands, and `sweep` its workers' fork server too.

The tracking process's MLflow import (about a second) is on a short run's critical path: the
first update waits for the run to exist, and a sweep's members for its parent run. Started
here, it overlaps the CLI's own imports (spec models, typer) as well as torch's. Only the
standard library, `tracking.process` and (for `sweep`) `execution.local` are imported for it;
the command then sends its first request to the same process, and its pool forks its workers
from the same fork server, which imports torch and SB3 meanwhile (with a local executor only:
a Ray cluster's workers are its own).
"""

from __future__ import annotations

import multiprocessing
import os
import sys

CLI_MODULE = "ppo_platform.cli"


def _command() -> str | None:
    """`run` for `ppo-platform run ...` or `python -m ppo_platform.cli run ...` (and so on),
    None for `--help`, another program, or a pool worker (which imports the command's main
    module as it starts, with its arguments)."""
    # A worker runs the main module again while it starts ("inheriting", multiprocessing's own
    # flag for it, which it checks to refuse starting processes then), before it knows its parent.
    child = getattr(multiprocessing.current_process(), "_inheriting", False)
    if child or multiprocessing.parent_process() is not None:
        return None
    argv = list(getattr(sys, "orig_argv", sys.argv))
    if "-m" in argv[:-1] and argv[argv.index("-m") + 1] == CLI_MODULE:
        rest = argv[argv.index("-m") + 2 :]
    elif os.path.basename(sys.argv[0]) == "ppo-platform":
        rest = sys.argv[1:]
    else:
        return None
    return None if not rest or {"--help", "-h"} & set(rest) else rest[0]


def start_tracking_early() -> None:
    """Start this process's tracking process now if it is about to train a run or a sweep, and
    a sweep's fork server."""
    command = _command()
    if command not in ("run", "sweep"):
        return
    from ppo_platform import tracing
    from ppo_platform.tracking.process import shared_tracking_process

    shared_tracking_process()
    tracing.mark("cli: tracking process started early")
    if command == "sweep":
        from ppo_platform.execution.choose import TRAINING_MODULES
        from ppo_platform.execution.local import pool_context
        from ppo_platform.settings import get_settings

        try:
            settings = get_settings()
        except Exception:  # a bad setting: the command itself says so, with its fix
            return
        if settings.executor == "local":
            pool_context(TRAINING_MODULES, settings.torch_threads)
            tracing.mark("cli: fork server started early")
