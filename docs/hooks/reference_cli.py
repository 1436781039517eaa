"""The CLI reference: every command of `ppo-platform`, from the Typer app's click commands.

Typer vendors its own click, so commands are recognised by what they have (a group has
`commands`, an option has `opts`), not by click's classes.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from importlib.metadata import entry_points
from typing import Any

import typer
from markdown_table import GENERATED_NOTE, cell, table

PROGRAM = "ppo-platform"


def typer_app() -> typer.Typer:
    """The Typer app behind the `ppo-platform` console script (found through its entry point)."""
    (script,) = entry_points(group="console_scripts", name=PROGRAM)
    module = importlib.import_module(script.module)
    app = getattr(module, "app", None)
    if not isinstance(app, typer.Typer):
        raise RuntimeError(f"{script.module} has no Typer `app` beside `{script.attr}`")
    return app


def root_command() -> Any:
    """The click command Typer builds for the app (a group of commands)."""
    return typer.main.get_command(typer_app())


def walk(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every leaf command's path below `command`, sorted by name (groups are not leaves)."""
    subcommands = getattr(command, "commands", None)
    if subcommands is None:
        yield path
        return
    for name in sorted(subcommands):
        if not subcommands[name].hidden:
            yield from walk(subcommands[name], (*path, name))


def command_at(root: Any, path: tuple[str, ...]) -> Any:
    command = root
    for name in path:
        command = command.commands[name]
    return command


def command_paths() -> list[str]:
    """`ppo-platform validate`, `ppo-platform keys create`, ...: what the page documents."""
    return [" ".join((PROGRAM, *path)) for path in walk(root_command())]


def param_rows(command: Any, ctx: Any) -> list[tuple[str, str, str]]:
    """(parameter, kind, help) as `--help` prints them: defaults and ranges are in the help."""
    rows = []
    for param in command.params:
        record = param.get_help_record(ctx)
        if param.hidden or record is None:
            continue
        names, help_text = record
        rows.append((f"`{names}`", param.param_type_name, help_text))
    return rows


def command_section(root: Any, path: tuple[str, ...]) -> str:
    command = command_at(root, path)
    full = " ".join((PROGRAM, *path))
    ctx = typer.Context(command, info_name=full)
    usage = " ".join(command.collect_usage_pieces(ctx))
    parts = [
        f"## {full}\n",
        f"```\n{full} {usage}\n```\n",
        cell(command.help or command.short_help or "") + "\n",
    ]
    rows = param_rows(command, ctx)
    if rows:
        parts.append(table(("parameter", "kind", "help"), rows))
    return "\n".join(parts)


def cli_page() -> str:
    root = root_command()
    paths = list(walk(root))
    intro = [
        "# CLI commands\n",
        GENERATED_NOTE,
        cell(root.help or "") + "\n",
        "Every command also answers `--help`.\n",
        table(
            ("command", "what it does"),
            (
                (f"[`{' '.join((PROGRAM, *p))}`](#{anchor(p)})", summary(command_at(root, p)))
                for p in paths
            ),
        ),
    ]
    sections = [command_section(root, path) for path in paths]
    return "\n".join([*intro, *sections, exit_codes_section()])


def exit_codes_section() -> str:
    """Exit codes from the one table that maps each kind of error to its code."""
    from ppo_platform.errors import EXIT_CODES, EXIT_OK

    kinds: dict[int, list[str]] = {EXIT_OK: ["success"]}
    for kind, code in EXIT_CODES.items():
        doc = " ".join((kind.__doc__ or "").strip().split("\n\n")[0].split())
        kinds.setdefault(code, []).append(f"`{kind.__name__}`: {doc}")
    rows = [(f"`{code}`", "; ".join(kinds[code])) for code in sorted(kinds)]
    return "## Exit codes\n\n" + table(("exit code", "when"), rows)


def summary(command: Any) -> str:
    return command.get_short_help_str(limit=200)


def anchor(path: tuple[str, ...]) -> str:
    """The id the toc extension gives `## ppo-platform keys create`."""
    return "-".join((PROGRAM, *path)).lower()
