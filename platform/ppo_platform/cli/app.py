"""`ppo-platform` command line. Thin shell over the library.

Exit codes (the one mapping is `ppo_platform.errors.exit_code`): 0 ok, 1 training failed or
stopped by a diagnostics alert, 2 bad, refused, unknown or conflicting input, 3 a database or
store did not answer (try again later), 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import ValidationError

from ppo_platform import tracing
from ppo_platform.cli import lifecycle
from ppo_platform.cli.agent_commands import register as register_agent_commands
from ppo_platform.cli.compare_command import register as register_compare_command
from ppo_platform.cli.doctor_command import register as register_doctor_command
from ppo_platform.cli.env_commands import EnvPackages, register_env_commands
from ppo_platform.cli.interop_commands import register as register_interop_commands
from ppo_platform.cli.lm_commands import register as register_lm_commands
from ppo_platform.cli.options import Overrides
from ppo_platform.cli.output import bad_option, fail, settings_error
from ppo_platform.cli.plan_command import register as register_plan_command
from ppo_platform.cli.seeds_command import (
    SeedsOption,
    resume_seeds_command,
    run_seeds_command,
    seeds_to_train,
)
from ppo_platform.cli.service_commands import register as register_service_commands
from ppo_platform.errors import (
    EXIT_BAD_INPUT as EXIT_BAD_INPUT,  # re-exported with EXIT_OK: tests compare exit codes
)
from ppo_platform.errors import (
    EXIT_FAILED,
    PlatformError,
    SpecError,
    SpecIssue,
)
from ppo_platform.errors import (
    EXIT_OK as EXIT_OK,
)
from ppo_platform.process_exit import exit_now
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.loader import dump_spec
from ppo_platform.spec.names import check_run_id, path_inside
from ppo_platform.workloads import load_experiment, run_experiment

if TYPE_CHECKING:
    from ppo_platform.spec.workloads import AnySpec
    from ppo_platform.sweeps.events import SweepEvent

app = typer.Typer(
    name="ppo-platform",
    help="Declarative PPO experiments: validate a YAML spec, train it with stable-baselines3, "
    "track it in MLflow.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

SpecPath = Annotated[
    Path, typer.Argument(help="Path to a YAML experiment spec.", show_default=False)
]

Force = Annotated[bool, typer.Option("--force", help="Overwrite existing files in --out.")]


@app.command()
def validate(
    spec: SpecPath,
    overrides: Overrides = None,
    show: bool = typer.Option(
        False, "--show", help="Print the resolved spec (all defaults filled in)."
    ),
    env_package: EnvPackages = None,
) -> None:
    """Check a spec against the schema and the refusal rules (exit 0 ok, 2 bad or refused)."""
    try:
        experiment = load_experiment(spec, overrides or [])
    except PlatformError as error:
        fail(error)
    typer.echo(
        f"ok: {spec} is a valid {experiment.algorithm} spec '{experiment.name}' "
        f"(hash {experiment.spec_hash()})"
    )
    if show:
        typer.echo(dump_spec(experiment))


@app.command()
def schema() -> None:
    """Print the spec's JSON Schema (a gymnasium or a language-model spec, by `algorithm`)."""
    from ppo_platform.spec.any_spec import spec_json_schema

    typer.echo(json.dumps(spec_json_schema(), indent=2))


def _check_run_options(spec: Path | None, seeds: str | None, resume: str | None) -> None:
    """`run`'s options that cannot go together: exit 2 naming them."""
    if seeds is not None and (spec is None or resume is not None):
        bad_option(
            "--seeds",
            seeds,
            "trains a SPEC's seeds; it does not resume a run.",
            "e.g. `ppo-platform run specs/cartpole.yaml --seeds 0-15`.",
        )
    if (spec is None) == (resume is None):
        bad_option(
            "SPEC/--resume",
            None,
            "give a SPEC to train or --resume RUN_ID (exactly one).",
            "e.g. `ppo-platform run specs/cartpole.yaml` or `ppo-platform run --resume <run id>`.",
        )


def _load_for_run(
    spec: Path | None, overrides: list[str], seeds: str | None, reaped: Any
) -> tuple[Any, list[int] | None]:
    """The spec loaded (None with --resume) and the seeds it trains as a batch (None: one
    run); a refused spec exits 2 after saying which dead runs the start marked KILLED."""
    if spec is None:
        return None, None
    try:
        experiment = load_experiment(spec, overrides, check_env=False)
        batch = seeds_to_train(experiment, seeds)
    except PlatformError as error:
        lifecycle.note_reaped(reaped())
        fail(error)
    if isinstance(experiment, ExperimentSpec):  # jax's side while torch imports, if compiled
        from ppo_platform.training.compiled_warmup import start

        start(experiment, batch or [experiment.budget.seed])
    return experiment, batch


@app.command()
def run(
    spec: Annotated[
        Path | None, typer.Argument(help="Path to a YAML experiment spec.", show_default=False)
    ] = None,
    overrides: Overrides = None,
    resume: Annotated[
        str | None,
        typer.Option(
            help="MLflow run id to continue from its last checkpoint (a batch's parent run: "
            "each of its unfinished seeds)."
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option(help="Only print the final summary.")] = False,
    env_package: EnvPackages = None,
    seeds: SeedsOption = None,
) -> None:
    """Train a spec (or resume a run) and log it to MLflow."""
    _check_run_options(spec, seeds, resume)
    from ppo_platform.tracking.remote import start_reaping

    tracing.mark("cli: run command")
    reaped = start_reaping()  # first (MLflow's import overlaps torch's); a refused spec reaps
    tracing.mark_exit_begins()
    tracing.mark("cli: tracking process spawned")
    experiment, batch = _load_for_run(spec, overrides or [], seeds, reaped)
    if batch is not None:
        lifecycle.note_reaped(reaped())
        return run_seeds_command(experiment, batch)
    from ppo_platform.training.progress import make_reporter
    from ppo_platform.training.runner import resume_run
    from ppo_platform.workloads.seeds import is_batch

    tracing.mark("cli: runner imported (torch, SB3)")

    if resume is not None and is_batch(resume):
        lifecycle.note_reaped(reaped())
        return resume_seeds_command(resume)
    reporter = make_reporter(quiet=quiet)
    lifecycle.start_guard(reap=False)
    try:
        if resume is not None:
            result = resume_run(resume, on_progress=reporter)
        else:
            assert experiment is not None
            result = run_experiment(experiment, on_progress=reporter)
    except PlatformError as error:
        reporter.close()  # stop a live progress bar before the message
        lifecycle.note_reaped(reaped())
        fail(error)
    except KeyboardInterrupt as error:
        reporter.close()
        lifecycle.interrupted(error, "checkpoint saved, run marked KILLED.")
    reporter.close()
    lifecycle.note_reaped(reaped())
    typer.echo(result.summary())
    tracing.mark("cli: summary printed")
    lifecycle.all_durable()  # the run is closed and acknowledged durable: `main` may exit at once
    if result.status != "FINISHED":
        raise typer.Exit(EXIT_FAILED)


@app.command()
def sweep(
    spec: SpecPath,
    overrides: Overrides = None,
    workers: Annotated[
        int | None,
        typer.Option(min=1, help="Parallel worker processes (default: the machine's cores)."),
    ] = None,
    env_package: EnvPackages = None,
) -> None:
    """Run a spec's sweep: grid x seeds in parallel processes, then print the comparison report."""
    from ppo_platform.sweeps import run_sweep
    from ppo_platform.tracking.remote import start_reaping

    lifecycle.start_guard(reap=False)
    # Awaited at the first event (the parent run open, so reaping done): workers start meanwhile.
    reaped = [start_reaping()]

    def tell(event: SweepEvent) -> None:
        if reaped:
            lifecycle.note_reaped(reaped.pop()())
        typer.echo(event.describe())

    try:
        experiment = load_experiment(spec, overrides or [], check_env=False)
        result = run_sweep(experiment, workers=workers, source=str(spec), on_event=tell)
    except PlatformError as error:
        fail(error)
    except KeyboardInterrupt as error:
        lifecycle.interrupted(
            error, "run the same command again to finish the sweep (finished runs are skipped)."
        )
    if result.report is not None:
        typer.echo("\n" + result.report.markdown)
        typer.echo(f"report files: {result.report.files[0].parent}")
    typer.echo(result.summary())
    lifecycle.all_durable()  # every member and the parent run closed and acknowledged, pool shut
    if result.failed:
        raise typer.Exit(EXIT_FAILED)


@app.command()
def report(
    parent_run_id: Annotated[
        str, typer.Argument(help="The sweep's MLflow parent run id.", show_default=False)
    ],
    baseline: Annotated[
        str | None,
        typer.Option(
            help="The variant every other is compared with, as the report names it "
            "(e.g. update.epochs=4) [default: the first variant].",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Build a sweep's comparison report again, log it to the parent run and print it."""
    from ppo_platform.reports import REPORT_KEYS, build_report
    from ppo_platform.settings import get_settings
    from ppo_platform.tracking.requests import attach_artifacts, read_sweep

    settings = get_settings()
    try:
        folder = path_inside(
            settings.runs_dir, [check_run_id(parent_run_id, "PARENT_RUN_ID")], "PARENT_RUN_ID"
        )
        sweep = read_sweep(parent_run_id, REPORT_KEYS, settings.tracking_uri)
        result = build_report(sweep, folder / "report", baseline)
        attach_artifacts(parent_run_id, result.files, "report", settings.tracking_uri)
    except PlatformError as error:
        fail(error)
    typer.echo(result.markdown)
    typer.echo(f"report files: {result.files[0].parent}")


register_compare_command(app)  # compare (compare_command.py), after report
register_plan_command(app)  # plan (plan_command.py), here to keep the help's order

TuneWorkers = Annotated[
    int,
    typer.Option(min=1, help="Parallel worker processes on this machine (one torch thread each)."),
]
TuneStorage = Annotated[
    str | None,
    typer.Option(
        help="Optuna storage: journal:PATH or a database URL (sqlite:///..., "
        "postgresql://...). Default: a journal file under PPO_PLATFORM_HOME."
    ),
]
TuneStudy = Annotated[
    str | None,
    typer.Option(help="Study name (default: the spec's name). Run again to continue it."),
]
TuneSpace = Annotated[
    str | None,
    typer.Option(help="`auto`: search around the spec's values instead of its tune.space."),
]
TuneOut = Annotated[
    Path | None, typer.Option(help="Output folder (default: outputs/tune-<study>).")
]


def _spec_to_tune(spec: Path, overrides: list[str], space: str | None) -> AnySpec:
    """The spec (either kind) with its search space: its own tune section, or `--space
    auto`'s (gymnasium specs only)."""
    from ppo_platform.spec.workloads import load_any_spec
    from ppo_platform.tuning import with_auto_space

    experiment = load_any_spec(spec, overrides)
    if space == "auto" and isinstance(experiment, ExperimentSpec):
        return with_auto_space(experiment)
    if space == "auto":
        bad_option(
            "--space",
            space,
            "has no automatic space for ppo_lm specs.",
            "write a tune.space over the spec's fields (see docs/guides/language-models.md).",
        )
    if experiment.tune is None:
        issue = SpecIssue(
            "tune",
            "the spec has no tune: section.",
            fix="add one (see specs/tune_cartpole.yaml) or pass --space auto.",
        )
        raise SpecError([issue], str(spec))
    return experiment


@app.command()
def tune(
    spec: SpecPath,
    overrides: Overrides = None,
    workers: TuneWorkers = 1,
    storage: TuneStorage = None,
    study: TuneStudy = None,
    space: TuneSpace = None,
    out: TuneOut = None,
    force: Force = False,
    env_package: EnvPackages = None,
) -> None:
    """Tune a spec with Optuna: parallel workers, pruning, multi-seed trials -> best_spec.yaml."""
    from ppo_platform.tuning import run_study

    if space not in (None, "auto"):
        bad_option(
            "--space",
            space,
            "is not a known search space; the only value is `auto`.",
            "pass --space auto, or leave it out to search the spec's own tune.space.",
        )
    lifecycle.start_guard()
    try:
        experiment = _spec_to_tune(spec, overrides or [], space)
        result = run_study(
            experiment,
            workers=workers,
            storage=storage,
            study_name=study,
            out_dir=out,
            force=force,
        )
    except PlatformError as error:
        fail(error)
    except KeyboardInterrupt as error:
        lifecycle.interrupted(error, "run the same command again to continue the study.")
    outputs = result.outputs
    typer.echo(
        f"best trial {outputs.best_trial}: value {outputs.best_value:.4g} "
        f"(study '{result.study_name}', storage {result.storage}, "
        f"MLflow parent run {result.parent_run_id})"
    )
    for path in (outputs.best_spec, outputs.summary, *outputs.plots):
        typer.echo(f"wrote {path}")
    typer.echo(f"next: ppo-platform run {outputs.best_spec}")
    lifecycle.all_durable()  # the study's trials, parent run and output files are written


register_service_commands(app)  # serve, keys, submit, status, cancel (cli_service.py)
register_interop_commands(app)  # import-zoo (cli_interop.py)
register_env_commands(app)  # envs (env_commands.py)
register_agent_commands(app)  # enjoy, export (agent_commands.py)
register_lm_commands(app)  # lm init-demo (lm_commands.py)
register_doctor_command(app)  # doctor (doctor_command.py)


def main() -> None:
    try:
        app(prog_name="ppo-platform")
    except ValidationError as error:
        if error.title != "Settings":
            raise
        typer.echo(f"error: {settings_error(error)}", err=True)  # a variable no command caught
        raise SystemExit(EXIT_BAD_INPUT) from None
    except SystemExit as done:
        if lifecycle.is_durable() and isinstance(done.code, int | None):
            exit_now(done.code or 0)  # skips the interpreter's teardown (process_exit.py)
        raise
