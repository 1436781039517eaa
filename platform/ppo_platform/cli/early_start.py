"""`ppo-platform run` starts its tracking process before the CLI imports its commands.

The tracking process's MLflow import (about a second) is on a short run's critical path: the
first update waits for the run to exist. Started here, it overlaps the CLI's own imports (spec
models, typer) as well as torch's. Only the standard library and `tracking.process` are
imported for it; the `run` command then sends its first request to the same process.
"""

from __future__ import annotations

import os
import sys

CLI_MODULE = "ppo_platform.cli"


def _is_run_command() -> bool:
    """This process is `ppo-platform run ...` or `python -m ppo_platform.cli run ...`."""
    argv = list(getattr(sys, "orig_argv", sys.argv))
    if "-m" in argv[:-1] and argv[argv.index("-m") + 1] == CLI_MODULE:
        rest = argv[argv.index("-m") + 2 :]
    elif os.path.basename(sys.argv[0]) == "ppo-platform":
        rest = sys.argv[1:]
    else:
        return False
    return rest[:1] == ["run"] and not {"--help", "-h"} & set(rest)


def start_tracking_early() -> None:
    """Start this process's tracking process now if it is about to train a run."""
    if _is_run_command():
        from ppo_platform import tracing
        from ppo_platform.tracking.process import shared_tracking_process

        shared_tracking_process()
        tracing.mark("cli: tracking process started early")
