"""What every training command does around its work: SIGTERM handled like Ctrl-C and runs left
RUNNING by a dead process reaped before it, the exit code and message of an interrupt, and the
mark that all it did is durable (so `main` may end the process without the teardown)."""

from __future__ import annotations

from typing import NoReturn

import typer

from ppo_platform import tracing
from ppo_platform.errors import EXIT_INTERRUPTED, exit_code

_durable = [False]  # set by `run`, `sweep` and `tune` once all they did is closed and durable


def start_guard(reap: bool = True) -> None:
    """Before training: SIGTERM handled like Ctrl-C, and runs of this home left RUNNING by a
    process that is gone (SIGKILL, OOM) marked KILLED; they stay resumable. `run` leaves the
    reaping to its tracking process (`reap=False`), so it never imports MLflow itself."""
    from ppo_platform.execution.signals import terminate_as_interrupt

    terminate_as_interrupt()
    if reap:  # by this process's tracking process: MLflow is not imported here
        from ppo_platform.tracking.remote import start_reaping

        note_reaped(start_reaping()())


def note_reaped(run_ids: list[str] | tuple[str, ...]) -> None:
    for run_id in run_ids:
        typer.echo(
            f"note: run {run_id} was left RUNNING by a process that is gone; marked KILLED "
            f"(continue it with: ppo-platform run --resume {run_id}).",
            err=True,
        )


def interrupted(error: KeyboardInterrupt, what: str) -> NoReturn:
    """Ctrl-C (exit 130) or SIGTERM (exit 143): say what happened, exit with its code."""
    label = "terminated" if exit_code(error) != EXIT_INTERRUPTED else "interrupted"
    tracing.mark(f"cli: {label}, exiting")
    typer.echo(f"{label}: {what}", err=True)
    raise typer.Exit(exit_code(error)) from None


def all_durable() -> None:
    """What the command did is on disk: `main` may end the process without the teardown."""
    _durable[0] = True


def is_durable() -> bool:
    return _durable[0]
