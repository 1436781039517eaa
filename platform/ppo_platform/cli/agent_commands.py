"""`ppo-platform enjoy` and `export`: the trained agent of a run, watched, filmed or exported.

Registered on the main Typer app by app.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ppo_platform.cli.env_commands import EnvPackages
from ppo_platform.cli.output import bad_option, fail
from ppo_platform.errors import PlatformError

RunId = Annotated[str, typer.Argument(help="The MLflow run id of a run of this platform home.")]
Force = Annotated[bool, typer.Option("--force", help="Overwrite the output file if it exists.")]


def check_output(option: str, path: Path, suffix: str, force: bool) -> Path:
    """An output file the user named: the right suffix, an existing folder, and no file
    overwritten unless --force."""
    if path.suffix.lower() != suffix:
        bad_option(option, str(path), f"must be a {suffix} file.", f"e.g. {option} agent{suffix}")
    if not path.parent.is_dir():
        bad_option(option, str(path), "its folder does not exist.", "create the folder first.")
    if path.exists() and not force:
        bad_option(option, str(path), "exists already.", "add --force to overwrite it.")
    if path.exists() and not path.is_file():
        bad_option(option, str(path), "is not a regular file.", "name a file.")
    return path


def enjoy(
    run_id: RunId,
    episodes: Annotated[
        int, typer.Option("--episodes", min=1, max=100, help="Episodes to play.")
    ] = 3,
    video: Annotated[
        Path | None,
        typer.Option("--video", help="Record the episodes to this MP4 file (the video extra)."),
    ] = None,
    stochastic: Annotated[
        bool, typer.Option("--stochastic", help="Sample actions instead of the greedy ones.")
    ] = False,
    force: Force = False,
    env_package: EnvPackages = None,
) -> None:
    """Play a run's trained policy on its own env and print each episode's return."""
    from ppo_platform.settings import get_settings
    from ppo_platform.training.play import load_policy, play, record, trained_run

    if video is not None:
        check_output("--video", video, ".mp4", force)
    try:
        run = trained_run(get_settings(), run_id)
        model, env = load_policy(run, render_mode="rgb_array" if video else None)
        try:
            if video is not None:
                played = record(model, env, video, episodes, deterministic=not stochastic)
            else:
                played = play(model, env, episodes, deterministic=not stochastic)
        finally:
            env.close()
    except PlatformError as error:
        fail(error)
    source = "final model" if run.final else f"last checkpoint ({run.model.name})"
    typer.echo(f"run {run_id}: {run.spec.env.id}, {source}")
    for number, episode in enumerate(played, start=1):
        typer.echo(f"episode {number}: return {episode.reward:.2f} ({episode.length} steps)")
    if played:
        mean = sum(e.reward for e in played) / len(played)
        typer.echo(f"mean return {mean:.2f} over {len(played)} episode(s)")
    if video is not None:
        typer.echo(f"wrote {video}")


def export(
    run_id: RunId,
    onnx: Annotated[
        Path,
        typer.Option("--onnx", help="Write the policy as an ONNX graph to this .onnx file."),
    ],
    force: Force = False,
    env_package: EnvPackages = None,
) -> None:
    """Export a run's policy to ONNX, checked with onnxruntime against the torch policy."""
    from ppo_platform.interop.onnx_export import export_onnx
    from ppo_platform.settings import get_settings
    from ppo_platform.training.play import trained_run

    check_output("--onnx", onnx, ".onnx", force)
    try:
        result = export_onnx(trained_run(get_settings(), run_id), onnx)
    except PlatformError as error:
        fail(error)
    folded = "normalization folded in; " if result.normalized else ""
    inputs = ", ".join(graph_input.describe() for graph_input in result.inputs)
    travels = (
        f"its weights are in {result.external_data.name}: copy both files together"
        if result.external_data is not None
        else "one self-contained file"
    )
    typer.echo(
        f"wrote {result.path} ({travels}): input {inputs}, raw; output `action`; "
        f"{folded}onnxruntime agreed with torch on {result.checked} observations "
        f"(max difference {result.max_difference:.2g})."
    )


def register(app: typer.Typer) -> None:
    """Add `enjoy` and `export` to the CLI."""
    app.command("enjoy")(enjoy)
    app.command("export")(export)
