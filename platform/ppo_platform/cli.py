"""`ppo-platform` command line. Thin shell over the library; exit codes are mapped here only.

Exit codes: 0 ok, 1 training failed or stopped by a diagnostics alert, 2 bad or refused input,
130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from .errors import PlatformError, RunNotFoundError, SpecError, TrainingError
from .loader import dump_spec, load_spec

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130

app = typer.Typer(
    name="ppo-platform",
    help="Declarative PPO experiments: validate a YAML spec, train it with stable-baselines3, "
    "track it in MLflow.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

SpecPath = Annotated[Path, typer.Argument(help="Path to a YAML experiment spec.", show_default=False)]
Overrides = Annotated[
    list[str] | None,
    typer.Option("--set", help="Override a field: dotted.path=value (repeatable); validated as usual."),
]


def fail(error: PlatformError) -> NoReturn:
    """Print a platform error for a person and exit with its code."""
    code = EXIT_BAD_INPUT if isinstance(error, (SpecError, RunNotFoundError)) else EXIT_FAILED
    label = "refused" if isinstance(error, SpecError) and error.refused else "error"
    typer.echo(f"{label}: {error}" if "\n" not in str(error) else f"{label}:\n{error}", err=True)
    raise typer.Exit(code)


@app.command()
def validate(spec: SpecPath, overrides: Overrides = None, show: bool = typer.Option(
        False, "--show", help="Print the resolved spec (all defaults filled in).")) -> None:
    """Check a spec against the schema and the refusal rules (exit 0 ok, 2 bad or refused)."""
    try:
        experiment = load_spec(spec, overrides or [])
    except SpecError as error:
        fail(error)
    typer.echo(f"ok: {spec} is a valid {experiment.algorithm} spec '{experiment.name}' "
               f"(hash {experiment.spec_hash()})")
    if show:
        typer.echo(dump_spec(experiment))


@app.command()
def schema() -> None:
    """Print the spec's JSON Schema."""
    from .spec import ExperimentSpec

    typer.echo(json.dumps(ExperimentSpec.model_json_schema(), indent=2))


@app.command()
def run(
    spec: Annotated[Path | None, typer.Argument(help="Path to a YAML experiment spec.", show_default=False)] = None,
    overrides: Overrides = None,
    resume: Annotated[str | None, typer.Option(help="MLflow run id to continue from its last checkpoint.")] = None,
    quiet: Annotated[bool, typer.Option(help="Only print the final summary.")] = False,
) -> None:
    """Train a spec (or resume a run) and log it to MLflow."""
    from .progress import make_reporter
    from .runner import resume_run, run_spec

    if (spec is None) == (resume is None):
        typer.echo("error: give a SPEC to train or --resume RUN_ID (exactly one).", err=True)
        raise typer.Exit(EXIT_BAD_INPUT)
    reporter = make_reporter(quiet=quiet)
    try:
        if resume:
            result = resume_run(resume, on_progress=reporter)
        else:
            assert spec is not None
            result = run_spec(load_spec(spec, overrides or []), on_progress=reporter)
    except (SpecError, TrainingError, RunNotFoundError) as error:
        reporter.close()
        fail(error)
    except KeyboardInterrupt:
        reporter.close()
        typer.echo("interrupted: checkpoint saved, run marked KILLED.", err=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    reporter.close()
    typer.echo(result.summary())
    if result.status != "FINISHED":
        raise typer.Exit(EXIT_FAILED)


def main() -> None:
    app(prog_name="ppo-platform")


if __name__ == "__main__":
    sys.exit(main())
