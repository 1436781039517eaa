"""`--env-package MODULE` (on every command that builds or checks envs) and `ppo-platform envs`.

The option adds to `PPO_PLATFORM_ENV_PACKAGES` in this process's environment, so every child
process (sweep and tuning workers, async evaluation, subproc envs, Ray tasks) imports the same
packages. Each process imports them at its first look at gymnasium's registry (a repeated
`plan` answers from its cache without importing gymnasium at all).
"""

from __future__ import annotations

import os
from typing import Annotated

import typer

from ppo_platform.cli.output import bad_option, fail
from ppo_platform.errors import PlatformError


def _env_package_option(names: list[str] | None) -> list[str] | None:
    use_env_packages(names)  # at parse time: before the command's body builds anything
    return names


EnvPackages = Annotated[
    list[str] | None,
    typer.Option(
        "--env-package",
        metavar="MODULE",
        help="Import MODULE first: it registers your gymnasium environments (repeatable; adds "
        "to PPO_PLATFORM_ENV_PACKAGES, which child processes inherit). A spec never names code.",
        show_default=False,
        callback=_env_package_option,
    ),
]


def use_env_packages(names: list[str] | None) -> None:
    """Validate `--env-package` names and add them to the setting for this process and its
    children (exit 2 naming a bad one)."""
    from ppo_platform.envs.packages import ENV_PACKAGES_SETTING
    from ppo_platform.settings import get_settings, module_name_problem, parse_module_names

    for name in names or []:
        problem = module_name_problem(name)
        if problem:
            bad_option("--env-package", name, problem, "e.g. --env-package my_envs")
    try:
        configured = parse_module_names(os.environ.get(ENV_PACKAGES_SETTING, ""))
        merged = parse_module_names([*configured, *(names or [])])
        if merged:
            os.environ[ENV_PACKAGES_SETTING] = ",".join(merged)
        get_settings.cache_clear()
    except ValueError as error:  # PPO_PLATFORM_ENV_PACKAGES itself is malformed
        bad_option(ENV_PACKAGES_SETTING, os.environ.get(ENV_PACKAGES_SETTING), str(error), "")


def envs(
    contains: Annotated[
        str | None,
        typer.Option(help="Only ids containing this text (case-insensitive).", show_default=False),
    ] = None,
    env_package: EnvPackages = None,
) -> None:
    """List the environment ids this machine can train (gymnasium's registry after the env
    packages are imported); `ppo-platform validate` checks that one can be created."""
    from ppo_platform.envs.ids import matching_env_ids
    from ppo_platform.envs.packages import imported_env_packages

    try:
        ids = matching_env_ids(contains)
    except PlatformError as error:  # an env package that cannot be imported
        fail(error)
    for env_id in ids:
        typer.echo(env_id)
    packages = ", ".join(imported_env_packages()) or "none"
    typer.echo(f"env packages imported: {packages}", err=True)


def register_env_commands(app: typer.Typer) -> None:
    """Add `envs` to the CLI."""
    app.command()(envs)
