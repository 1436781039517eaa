"""`--set dotted.path=value` overrides, applied to plain spec data before validation."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from typing import Any

from ppo_platform.errors import SpecError, SpecIssue
from ppo_platform.spec.yaml_source import parse_yaml


def parse_override(assignment: str) -> tuple[str, Any]:
    """'update.epochs=10' -> ('update.epochs', 10), the value read as one YAML scalar or list."""
    path, sep, raw = assignment.partition("=")
    path = path.strip()
    if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*", path):
        raise SpecError(
            [
                SpecIssue(
                    path or assignment,
                    f"override {assignment!r} is not dotted.path=value.",
                    fix="write it as e.g. --set update.epochs=10",
                )
            ],
            "--set",
        )
    try:
        value, _ = parse_yaml(f"v: {raw}" if raw.strip() else "v: null", "--set")
    except SpecError as exc:
        raise SpecError(
            [
                SpecIssue(
                    path,
                    f"cannot read value {raw!r}: {exc.issues[0].message}",
                    fix="quote strings, e.g. --set name='\"my-run\"'",
                )
            ],
            "--set",
        ) from None
    return path, value["v"]


def apply_overrides(data: dict[str, Any], overrides: Iterable[str]) -> dict[str, Any]:
    """Apply `--set` overrides to plain spec data (a copy); the result is validated as usual."""
    result = copy.deepcopy(data)
    for assignment in overrides:
        path, value = parse_override(assignment)
        set_dotted(result, path, value, source="--set")
    return result


def set_dotted(data: dict[str, Any], path: str, value: Any, source: str | None = None) -> None:
    """Set data['a']['b'] = value for path 'a.b', creating mappings on the way (also in place
    of an optional section left null, e.g. a resolved spec's `surrogate.clip`)."""
    node = data
    parts = path.split(".")
    for depth, part in enumerate(parts[:-1]):
        child = node.setdefault(part, {})
        if child is None:
            child = node[part] = {}
        elif isinstance(child, (int, float)) and parts[depth + 1] in {"start", "schedule", "end"}:
            child = node[part] = {"start": child}  # `learning_rate: 1e-3` shorthand, now a mapping
        elif depth == 0 and part == "env" and isinstance(child, str):
            child = node[part] = {"id": child}  # `env: CartPole-v1` shorthand, now a mapping
        if not isinstance(child, dict):
            raise SpecError(
                [
                    SpecIssue(
                        ".".join(parts[: depth + 1]),
                        f"is {child!r}, not a mapping, so {path} cannot be set.",
                        fix="override the whole value instead.",
                    )
                ],
                source,
            )
        node = child
    node[parts[-1]] = value
