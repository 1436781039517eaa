"""`ppo-platform import-zoo`: bring an rl-baselines3-zoo hyperparameter entry along as a spec.

Registered on the main Typer app by cli/app.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ppo_platform.cli.env_commands import EnvPackages
from ppo_platform.cli.output import fail
from ppo_platform.errors import PlatformError


def import_zoo(
    hyperparams: Annotated[
        Path,
        typer.Argument(
            help="A zoo hyperparameter file, e.g. rl_zoo3/hyperparams/ppo.yml.", show_default=False
        ),
    ],
    env_id: Annotated[str, typer.Argument(help="The entry (env id) to import, e.g. Pendulum-v1.")],
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the spec to this file (default: print it).")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite --out if it exists.")] = False,
    env_package: EnvPackages = None,
) -> None:
    """Convert a zoo PPO entry into a validated spec (exit 0 ok, 2 unexpressible or refused)."""
    from ppo_platform.interop import import_zoo as convert
    from ppo_platform.interop import write_import

    try:
        result = convert(hyperparams, env_id)
        written = write_import(result, out, force) if out is not None else None
    except PlatformError as error:
        fail(error)
    for note in result.notes:
        typer.echo(f"note: {note}", err=True)
    if written is None:
        typer.echo(result.spec_yaml(), nl=False)
        return
    typer.echo(
        f"imported {env_id} from {hyperparams.name}: spec '{result.spec.name}' "
        f"(hash {result.spec.spec_hash()})\nwrote {written}\nnext: ppo-platform run {written}"
    )


def register(app: typer.Typer) -> None:
    """Add `import-zoo` to the CLI."""
    app.command("import-zoo")(import_zoo)
