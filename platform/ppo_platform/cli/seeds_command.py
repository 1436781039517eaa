"""`ppo-platform run SPEC --seeds 0-15` (or a spec with `budget.seeds`): the seeds of one spec,
each a run under one parent (ppo_platform/workloads/seeds.py)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ppo_platform.cli import lifecycle
from ppo_platform.cli.output import bad_option, fail
from ppo_platform.errors import EXIT_FAILED, PlatformError
from ppo_platform.spec.experiment import ExperimentSpec

SeedsOption = Annotated[
    str | None,
    typer.Option(
        help="Train these seeds instead of budget.seed, each an MLflow run under one parent "
        "run: a range `0-15`, a list `0,3,9` or both (at most 64); replaces the spec's "
        "budget.seeds. With `compiled: auto` or `on` the seeds train together in one process.",
        show_default=False,
    ),
]


def seeds_to_train(experiment: Any, text: str | None) -> list[int] | None:
    """The seeds `run` trains as a batch: `--seeds`, else the spec's budget.seeds; None: one
    run. `--seeds` on a spec that has no seeds to vary (a language model's) exits 2."""
    from ppo_platform.spec.seeds import parse_seeds

    if text is None:
        budget = getattr(experiment, "budget", None)
        return getattr(budget, "seeds", None)
    chosen = parse_seeds(text)
    if not isinstance(experiment, ExperimentSpec):
        bad_option(
            "--seeds",
            text,
            "trains the seeds of a gymnasium spec; this spec is another workload's.",
            "run it without --seeds (a language-model run takes its seed from the spec).",
        )
    return chosen


def run_seeds_command(experiment: ExperimentSpec, seeds: list[int]) -> None:
    """Every seed a run under one parent; exit 1 if a seed failed or was stopped."""
    from ppo_platform.workloads.seeds import run_many

    batch(lambda: run_many(experiment, seeds))


def resume_seeds_command(parent_run_id: str) -> None:
    """`run --resume PARENT` of a batch: its unfinished seeds, from their checkpoints."""
    from ppo_platform.workloads.seeds import resume_many

    batch(lambda: resume_many(parent_run_id))


def batch(train: Any) -> None:
    """Train a batch (`train()` gives its SeedsOutcome), print its summary, exit as it ended."""
    try:
        lifecycle.start_guard(reap=False)
        outcome = train()
    except PlatformError as error:
        fail(error)
    except KeyboardInterrupt as error:
        lifecycle.interrupted(error, "checkpoints saved, the seeds' runs marked KILLED.")
    typer.echo(outcome.summary())
    lifecycle.all_durable()
    if outcome.status != "FINISHED":
        raise typer.Exit(EXIT_FAILED)
