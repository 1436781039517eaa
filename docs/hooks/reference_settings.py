"""The settings reference: every field of every pydantic-settings model, as its variable."""

from __future__ import annotations

import ast
import importlib
import types
import typing
from pathlib import Path
from typing import Any

from markdown_table import GENERATED_NOTE, table
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings

REPO_ROOT = Path(__file__).resolve().parents[2]
# Source roots and the import package each folder holds.
SOURCE_ROOTS = {REPO_ROOT / "platform": "", REPO_ROOT / "api": "ppo_platform.api."}


def settings_modules() -> list[str]:
    """Modules that define a `class X(BaseSettings)`, found by reading the source (not by name)."""
    found = []
    for root, package_prefix in SOURCE_ROOTS.items():
        for path in sorted(root.rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            if any(_is_settings_class(node) for node in ast.walk(tree)):
                relative = path.relative_to(root).with_suffix("")
                parts = [p for p in relative.parts if p != "__init__"]
                found.append(package_prefix + ".".join(parts))
    return found


def _is_settings_class(node: ast.AST) -> bool:
    return isinstance(node, ast.ClassDef) and any(
        isinstance(base, ast.Name) and base.id == "BaseSettings" for base in node.bases
    )


def settings_models() -> list[type[BaseSettings]]:
    """Every pydantic-settings model defined in the project, in a stable order."""
    models: list[type[BaseSettings]] = []
    for name in settings_modules():
        module = importlib.import_module(name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, BaseSettings)
                and value is not BaseSettings
                and value.__module__ == module.__name__
            ):
                models.append(value)
    return models


def variable_names(model: type[BaseSettings], name: str, field: FieldInfo) -> list[str]:
    """The environment variables that set a field: its alias, or prefix + NAME."""
    alias = field.validation_alias
    if isinstance(alias, str):
        return [alias]
    prefix = str(model.model_config.get("env_prefix", ""))
    return [f"{prefix}{name}".upper()]


def describe_default(field: FieldInfo) -> str:
    if field.default_factory is not None:
        factory: Any = field.default_factory
        if factory in (dict, list):
            return f"`{factory()}`"
        return "depends on the machine (see the description)"
    if field.default is None:
        return "unset"
    return f"`{field.default}`"


def describe_type(annotation: Any) -> str:
    if isinstance(annotation, type) and not isinstance(annotation, types.GenericAlias):
        return annotation.__name__
    if typing.get_origin(annotation) is typing.Literal:
        return " | ".join(f"`{value}`" for value in typing.get_args(annotation))
    return str(annotation).replace("typing.", "").replace("pathlib.", "")


def settings_rows() -> list[tuple[str, str, str, str, str]]:
    """(variable, type, default, description, model) for every field; one row per variable."""
    rows = []
    seen: set[str] = set()
    for model in settings_models():
        for name, field in model.model_fields.items():
            for variable in variable_names(model, name, field):
                if variable in seen:  # one variable read by two models: documented once
                    continue
                seen.add(variable)
                rows.append(
                    (
                        f"`{variable}`",
                        describe_type(field.annotation),
                        describe_default(field),
                        field.description or "",
                        f"`{model.__module__}.{model.__name__}`",
                    )
                )
    return sorted(rows)


# Variables read without a settings model: by the CLI's HTTP client, by the time marks (which
# must import nothing) and by the dashboard's sessions. The docs test fails on a PPO_PLATFORM_*
# name in the source that is neither a settings field nor listed here.
DIRECT_VARIABLES = {
    "PPO_PLATFORM_API_KEY": "API key that `submit`, `status` and `cancel` send to the server.",
    "PPO_PLATFORM_SERVER": "Server URL of `submit`, `status` and `cancel` when `--server` is "
    "not given (default http://127.0.0.1:8000).",
    "PPO_PLATFORM_TRACE_TIMES": "`1`: every process of a run prints time marks (start-up, "
    "imports, exit) to stderr, on one clock.",
    "PPO_PLATFORM_FAST_PATHS": "`0`: the trainers run stock stable-baselines3 and torch end to "
    "end instead of their bit-equal fast paths (default `1`; docs/guides/fast-paths.md).",
    "PPO_PLATFORM_DASHBOARD_SECRET": "Secret of the dashboard's CSRF tokens; default: a random "
    "secret made once in the platform home (`dashboard.secret`).",
}


def settings_page() -> str:
    return "\n".join(
        [
            "# Settings\n",
            GENERATED_NOTE,
            "Settings are read from the environment once per process (pydantic-settings). "
            "Relative paths are resolved against the working directory when the process "
            "starts.\n",
            table(("variable", "type", "default", "meaning", "read by"), settings_rows()),
            "## Read directly\n",
            "These are read where they are used, not through a settings model.\n",
            table(
                ("variable", "meaning"),
                ((f"`{name}`", text) for name, text in sorted(DIRECT_VARIABLES.items())),
            ),
        ]
    )
