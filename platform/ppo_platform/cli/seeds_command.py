"""`ppo-platform run SPEC --seeds 0-15`: the seeds of one spec, each a run under one parent
(ppo_platform/workloads/seeds.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ppo_platform.cli import lifecycle
from ppo_platform.cli.output import bad_option, fail
from ppo_platform.errors import EXIT_FAILED, PlatformError
from ppo_platform.workloads import load_experiment

SeedsOption = Annotated[
    str | None,
    typer.Option(
        help="Train these seeds instead of budget.seed, each an MLflow run under one parent "
        "run: a range `0-15`, a list `0,3,9` or both (at most 64). With `compiled: auto` or "
        "`on` the seeds train together in one process.",
        show_default=False,
    ),
]


def run_seeds_command(
    spec: Path | None, overrides: list[str], text: str, resume: str | None
) -> None:
    """`run SPEC --seeds ...`: every seed a run under one parent; exit 1 if one failed."""
    from ppo_platform.workloads.seeds import parse_seeds, run_many

    if spec is None or resume is not None:
        bad_option(
            "--seeds",
            text,
            "trains a SPEC's seeds; it does not resume a run.",
            "e.g. `ppo-platform run specs/cartpole.yaml --seeds 0-15`.",
        )
    try:
        chosen = parse_seeds(text)
        lifecycle.start_guard(reap=False)
        outcome = run_many(load_experiment(spec, overrides, check_env=False), chosen)
    except PlatformError as error:
        fail(error)
    except KeyboardInterrupt as error:
        lifecycle.interrupted(error, "checkpoints saved, the seeds' runs marked KILLED.")
    typer.echo(outcome.summary())
    lifecycle.all_durable()
    if outcome.failures or any(r.status != "FINISHED" for r in outcome.results.values()):
        raise typer.Exit(EXIT_FAILED)
