"""`ppo-platform lm ...`: language-model helpers (the demo model and prompts)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from ppo_platform.cli.output import fail
from ppo_platform.errors import PlatformError
from ppo_platform.spec.experiment import ExperimentSpec

lm_app = typer.Typer(
    name="lm",
    help="PPO on language models: build the demo model and prompts (algorithm: ppo_lm).",
    no_args_is_help=True,
)


@lm_app.command("init-demo")
def init_demo(
    sft_steps: Annotated[
        int,
        typer.Option(min=1, max=100_000, help="Supervised fine-tuning steps (64 prompts each)."),
    ] = 150,
    seed: Annotated[
        int, typer.Option(min=0, help="Seed of the model's initialisation and SFT.")
    ] = 0,
    force: Annotated[bool, typer.Option("--force", help="Rebuild an existing demo.")] = False,
) -> None:
    """Build a tiny GPT-2 (config + locally trained tokenizer; nothing downloaded), fine-tune
    it on short additions ("12+7=" -> "19") and write it with its prompts under the LM folder,
    ready for `ppo-platform run specs/lm_arithmetic.yaml`."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from ppo_platform.training.lm_demo import init_demo as build

    def progress(step: int, loss: float) -> None:
        if step % 50 == 0 or step == sft_steps:
            typer.echo(f"sft step {step}/{sft_steps} loss {loss:.4f}")

    try:
        files = build(sft_steps=sft_steps, seed=seed, force=force, on_step=progress)
    except PlatformError as error:
        fail(error)
    typer.echo(f"model: {files.model}")
    typer.echo(f"prompts: {files.train} (train), {files.heldout} (held out)")
    typer.echo(
        f"SFT held-out accuracy (greedy): {files.sft_accuracy:.3f}; built in {files.seconds:.0f} s"
    )
    typer.echo("next: ppo-platform run specs/lm_arithmetic.yaml")


def load_checked_spec(spec: Path, overrides: list[str]) -> Any:
    """A spec of either kind; a gymnasium one's env is checked as `validate` always did."""
    from ppo_platform.spec.env_ids import check_spec_env
    from ppo_platform.spec.lm_loader import load_any_spec

    experiment = load_any_spec(spec, overrides)
    if isinstance(experiment, ExperimentSpec):
        check_spec_env(experiment, str(spec))
    return experiment


def run_any_spec(spec: Path, overrides: list[str], reporter: Any) -> Any:
    """Train a gymnasium spec or an `algorithm: ppo_lm` one."""
    from ppo_platform.spec.lm_loader import load_any_spec
    from ppo_platform.training.runner import run_spec

    experiment = load_any_spec(spec, overrides)
    if isinstance(experiment, ExperimentSpec):
        return run_spec(experiment, on_progress=reporter)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded at run time
    from ppo_platform.training.lm_runner import run_lm_spec

    return run_lm_spec(experiment, on_progress=reporter)


def register(app: typer.Typer) -> None:
    """Add the `lm` command group to the CLI."""
    app.add_typer(lm_app)
