"""`ppo-platform lm ...`: language-model helpers (the demo model and prompts)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from ppo_platform.cli.output import fail
from ppo_platform.errors import PlatformError
from ppo_platform.planner.use_cases import LM_USE_CASES

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


def register(app: typer.Typer) -> None:
    """Add the `lm` command group to the CLI."""
    app.add_typer(lm_app)


ModelDir = Annotated[
    Path | None,
    typer.Option(
        "--model-dir",
        help="rlhf: the language model's folder (transformers format, local files only).",
        show_default=False,
    ),
]
PromptsFile = Annotated[
    Path | None,
    typer.Option(
        "--prompts",
        help='rlhf: JSONL prompts, one {"prompt": ..., "answer": ...} per line.',
        show_default=False,
    ),
]


def plan_lm(
    use_case: str,
    env: str | None,
    model_dir: Path | None,
    prompts: Path | None,
    budget: int,
    overrides: list[str],
) -> Any:
    """The rlhf plan (PPO) or the reasoning plan (GRPO) on the model in --model-dir over
    --prompts (an LMPlan)."""
    from ppo_platform.cli.output import bad_option
    from ppo_platform.planner import plan_lm_experiment

    if use_case not in LM_USE_CASES:
        bad_option(
            "--use-case",
            use_case,
            "must be rlhf or reasoning with --model-dir.",
            "pass --use-case rlhf (PPO) or --use-case reasoning (GRPO).",
        )
    if env is not None:
        bad_option("--env", env, f"has no place in the {use_case} plan.", "leave out --env.")
    if model_dir is None or prompts is None:
        missing = "--model-dir" if model_dir is None else "--prompts"
        bad_option(missing, "", f"is required for the {use_case} plan.", f"pass {missing}.")
    return plan_lm_experiment(model_dir, prompts, budget, overrides, use_case=use_case)
