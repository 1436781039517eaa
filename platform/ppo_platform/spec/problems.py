"""Every problem of a spec in one answer (docs/guides/spec.md, "Errors name the field, the value
and the fix"): refusals found beside schema errors, and a conflict that involves a default said
to be the default, with the field to set.

Beside schema errors: the values pydantic refused are taken out (their defaults stand in), the
rest is validated again, and what the refusal rules and consistency checks find there is
reported too, except problems about a field that was taken out (its own error says enough)."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from ppo_platform.errors import SpecIssue

MAX_REPAIRS = 3  # rounds of taking out refused values before giving up on the rest
_MISSING = object()


def _holds(data: Any, part: str | int) -> bool:
    if isinstance(data, dict):
        return part in data
    return isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data)


def _value_at(data: Any, path: Sequence[str | int]) -> Any:
    for part in path:
        if _holds(data, part):
            data = data[part]
        else:
            return _MISSING
    return data


def written(data: Any, dotted: str) -> bool:
    """True if the spec's own data sets the field at `dotted` (else its default applies); a
    value written in short (`clip_epsilon: 0.2` for its schedule's `start`) counts."""
    for part in (int(p) if p.isdigit() else p for p in dotted.split(".")):
        if _holds(data, part):
            data = data[part]
        else:
            return not isinstance(data, (dict, list))  # a short form holds the whole field
    return True


def _take_out(data: dict[str, Any], loc: Sequence[str | int]) -> str | None:
    """Delete the deepest key of `loc` that `data` has (a list goes whole); its dotted path."""
    for end in range(len(loc), 0, -1):
        parent = _value_at(data, loc[: end - 1])
        key = loc[end - 1]
        if isinstance(parent, dict) and key in parent:
            del parent[key]
            return ".".join(str(p) for p in loc[:end])
        if isinstance(parent, list) and end >= 2:
            grand = _value_at(data, loc[: end - 2])
            if isinstance(grand, dict) and loc[end - 2] in grand:
                del grand[loc[end - 2]]
                return ".".join(str(p) for p in loc[: end - 1])
    return None


def _under(path: str, taken: set[str]) -> bool:
    return any(path == t or path.startswith(f"{t}.") or t.startswith(f"{path}.") for t in taken)


def problems_beside_schema_errors(
    data: Any,
    error: ValidationError,
    model: type[BaseModel],
    checks: Callable[[Any], list[SpecIssue]],
) -> list[SpecIssue]:
    """What `checks` finds in `data` with the values pydantic refused taken out."""
    if not isinstance(data, dict):
        return []
    repaired, taken = copy.deepcopy(data), set()
    errors = error.errors()
    for _ in range(MAX_REPAIRS):
        for each in errors:
            loc = [p for p in each["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
            path = _take_out(repaired, loc)
            if path is None:
                return []  # a document-level error: nothing sensible is left to check
            taken.add(path)
        try:
            spec = model.model_validate(repaired)
        except ValidationError as again:
            errors = again.errors()
            continue
        return [issue for issue in checks(spec) if not _under(issue.path, taken)]
    return []


def say_defaults(issues: list[SpecIssue], data: Any) -> list[SpecIssue]:
    """An issue about a field the spec does not set says its value is the default, and that
    the fix is to set that field."""
    if not isinstance(data, dict):
        return issues
    said = []
    for issue in issues:
        if not issue.path or issue.value is None or written(data, issue.path):
            said.append(issue)
            continue
        said_value = issue.message.rstrip(".")
        message = f"{said_value}; {issue.path} is not set in the spec: this is its default."
        fix = f"set {issue.path} in the spec" + (f": {issue.fix}" if issue.fix else ".")
        said.append(dataclasses.replace(issue, message=message, fix=fix))
    return said
