"""How every CLI command reports a platform error: one label, one exit code from errors.py."""

from __future__ import annotations

from typing import Any, NoReturn

import typer

from ppo_platform.errors import BadInputError, IssueError, PlatformError, SpecIssue, exit_code


def fail(error: PlatformError) -> NoReturn:
    """Print a platform error for a person and exit with its code."""
    label = "refused" if isinstance(error, IssueError) and error.refused else "error"
    text = str(error)
    typer.echo(f"{label}:\n{text}" if "\n" in text else f"{label}: {text}", err=True)
    raise typer.Exit(exit_code(error))


def bad_option(option: str, value: object, message: str, fix: str) -> NoReturn:
    """`fail` for a command-line option that cannot be used (exit 2, like any bad input)."""
    fail(BadInputError([SpecIssue(option, message, value, fix=fix)], option))


def settings_error(error: Any) -> BadInputError:
    """A settings ValidationError as bad input: each variable, its value, why and the fix."""
    from ppo_platform.settings import variable_of

    issues = []
    for problem in error.errors():
        variable = variable_of(str(problem["loc"][0]) if problem["loc"] else "")
        fix = f"set {variable} to a valid value, or unset it for the default."
        issues.append(SpecIssue(variable, str(problem["msg"]), problem.get("input"), fix=fix))
    return BadInputError(issues, "environment")
