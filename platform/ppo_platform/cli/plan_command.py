"""`ppo-platform plan`: a gymnasium env and a budget, or (rlhf) a language-model folder and its
prompts, in; a runnable spec and the skill-ppo-trainer markdown out."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ppo_platform.cli.env_commands import EnvPackages
from ppo_platform.cli.lm_commands import ModelDir, PromptsFile, plan_lm
from ppo_platform.cli.options import Overrides
from ppo_platform.cli.output import bad_option, fail
from ppo_platform.errors import PlatformError
from ppo_platform.planner.use_cases import LM_USE_CASES, PLAN_USE_CASES

Force = Annotated[bool, typer.Option("--force", help="Overwrite existing files in --out.")]


def plan(
    budget: Annotated[
        int,
        typer.Option(
            "--budget",
            help="Training budget in env steps (rlhf: responses to sample).",
            show_default=False,
        ),
    ],
    env: Annotated[
        str | None,
        typer.Option(
            "--env", help="A registered gymnasium id, e.g. CartPole-v1.", show_default=False
        ),
    ] = None,
    use_case: Annotated[
        str,
        typer.Option(
            "--use-case",
            help=f"{' | '.join(PLAN_USE_CASES)} "
            "(rlhf: PPO, reasoning: GRPO, both on a language model with --model-dir).",
        ),
    ] = "auto",
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Folder for spec.yaml and skill-ppo-trainer.md [default: PPO_PLATFORM_OUTPUTS_DIR"
            " or ./outputs].",
            show_default=False,
        ),
    ] = None,
    overrides: Overrides = None,
    force: Force = False,
    env_package: EnvPackages = None,
    model_dir: ModelDir = None,
    prompts: PromptsFile = None,
) -> None:
    """Plan a PPO run for an env and budget (or, rlhf, for a language-model folder and its
    prompts): write a runnable spec and the skill-ppo-trainer md."""
    from ppo_platform.planner import plan_experiment, write_plan
    from ppo_platform.settings import Settings

    # The same default folder as tune's, read now: relative to this call's working directory.
    folder = out if out is not None else Settings().outputs_dir
    try:
        if model_dir or prompts or (env is None and use_case in LM_USE_CASES):
            planned: Any = plan_lm(use_case, env, model_dir, prompts, budget, overrides or [])
        elif env is None:
            bad_option("--env", "", "is required.", "pass --env ID (or --use-case rlhf "
                       "--model-dir DIR --prompts FILE for a language model).")  # fmt: skip
        else:
            planned = plan_experiment(env, budget, use_case, overrides or [])
        spec_path, markdown_path = write_plan(planned, folder, force)
    except PlatformError as error:
        fail(error)
    typer.echo(planned.summary())
    for warning in planned.warnings:
        typer.echo(f"warning: {warning}", err=True)
    typer.echo(f"wrote {spec_path}\nwrote {markdown_path}\nnext: ppo-platform run {spec_path}")


def register(app: typer.Typer) -> None:
    """Add `plan` to the CLI."""
    app.command()(plan)
