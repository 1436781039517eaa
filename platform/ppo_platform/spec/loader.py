"""Load a spec from YAML (or a dict) into a validated, refusal-checked `ExperimentSpec`.

The YAML is read by `yaml_source` (positions kept, tags and alias bombs refused); pydantic's
errors and the refusal rules become `SpecIssue`s naming field, value, line and the fix.
"""

from __future__ import annotations

import dataclasses
import difflib
import errno
import os
import stat
import types
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from ppo_platform.errors import SpecError, SpecIssue
from ppo_platform.spec.experiment import OWN_ENV_WAY_IN, ExperimentSpec
from ppo_platform.spec.lm import LMExperimentSpec, is_lm_data
from ppo_platform.spec.machine import machine_refusals
from ppo_platform.spec.overrides import apply_overrides, parse_override, set_dotted
from ppo_platform.spec.problems import problems_beside_schema_errors, say_defaults, written
from ppo_platform.spec.resources import resource_refusals
from ppo_platform.spec.rules import inconsistencies, refusals, rollout_over_budget_issue
from ppo_platform.spec.wrappers import BUILTIN_WRAPPERS, PACKAGE, PackageWrapperSpec
from ppo_platform.spec.yaml_source import (
    MAX_SPEC_BYTES,
    PathKey,
    Position,
    SpecYamlDumper,
    check_spec_size,
    decode_spec_bytes,
    dotted,
    parse_yaml,
)

MAX_ISSUES = 10
LM_ELSEWHERE = SpecIssue(
    "algorithm",
    "this step takes gymnasium specs only; ppo_lm specs are taken by validate, run, sweep, "
    "tune and the jobs API.",
    "ppo_lm",
    fix="run it with `ppo-platform run <spec>` (or sweep, tune) or submit it to the jobs API.",
)

__all__ = [
    "MAX_SPEC_BYTES",
    "apply_overrides",
    "dump_spec",
    "load_spec",
    "load_spec_text",
    "parse_override",
    "parse_yaml",
    "read_spec_text",
    "set_dotted",
    "validate_data",
]


def _without_wrapper_tag(loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
    """env.wrappers.0.atari.noop_max -> env.wrappers.0.noop_max (pydantic names the union
    member it tried; the user wrote no such key)."""
    wrapper_path = loc[:2] == ("env", "wrappers") and len(loc) > 3 and isinstance(loc[2], int)
    if wrapper_path and (loc[3] in BUILTIN_WRAPPERS or loc[3] == PACKAGE):
        return loc[:3] + loc[4:]
    return loc


def _wrapper_model(tagged: tuple[str | int, ...]) -> type[BaseModel] | None:
    """The wrapper model pydantic tried at env.wrappers.N, from the tag in its error location."""
    if _without_wrapper_tag(tagged) == tagged:
        return None
    return BUILTIN_WRAPPERS.get(str(tagged[3]), PackageWrapperSpec)


def _field_model(
    loc: tuple[str | int, ...],
    wrapper: type[BaseModel] | None = None,
    root: type[BaseModel] = ExperimentSpec,
) -> type[BaseModel] | None:
    """The pydantic model that owns the field at `loc[:-1]` (for 'allowed keys' hints)."""
    model: type[BaseModel] = root
    if loc[:2] == ("env", "wrappers") and len(loc) == 3:  # a wrapper's own field
        return wrapper
    for part in loc:
        if isinstance(part, int) and root is not ExperimentSpec:
            continue  # an item of a list of models (an LM spec's rewards): the list's model
        field = model.model_fields.get(str(part))
        if field is None:
            return None
        nested = _model_in(field.annotation)
        if nested is None:
            return None
        model = nested
    return model


def _field_description(
    loc: tuple[str | int, ...],
    wrapper: type[BaseModel] | None = None,
    root: type[BaseModel] = ExperimentSpec,
) -> str | None:
    model = _field_model(loc[:-1], wrapper, root) if loc else None
    field = model.model_fields.get(str(loc[-1])) if model else None
    if field is None or not field.description:
        return None
    return f"expected: {field.description}"


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType, list):
        for arg in typing.get_args(annotation):
            found = _model_in(arg)
            if found:
                return found
    return None


def _position(
    positions: dict[PathKey, Position], loc: tuple[str | int, ...]
) -> Position | tuple[None, None]:
    for end in range(len(loc), -1, -1):
        if loc[:end] in positions:
            return positions[loc[:end]]
    return (None, None)


def issue_from_pydantic(
    error: Any, positions: dict[PathKey, Position], root: type[BaseModel] = ExperimentSpec
) -> SpecIssue:
    tagged = tuple(
        part
        for part in error["loc"]
        if not (isinstance(part, str) and part.startswith("function-"))
    )
    loc, wrapper = _without_wrapper_tag(tagged), _wrapper_model(tagged)
    line, column = _position(positions, loc)
    kind, message, value, fix = (
        error["type"],
        error["msg"].rstrip(".") + ".",
        error.get("input"),
        None,
    )
    if kind == "extra_forbidden":
        model = _field_model(loc[:-1], wrapper, root)
        allowed = sorted(f.alias or name for name, f in model.model_fields.items()) if model else []
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        message = "unknown key."
        fix = (
            f"did you mean {close[0]!r}? " if close else ""
        ) + f"Allowed keys: {', '.join(allowed)}."
        value = None
    elif kind == "missing":
        message, value, fix = "required field is missing.", None, f"add {dotted(loc)}."
    elif kind == "finite_number":
        fix = "use a finite number (NaN and infinity are not allowed)."
    elif kind == "string_pattern_mismatch" and loc == ("env", "id") and ":" in str(value):
        message = "names code to import ('module:Id'): a spec never imports anything."
        fix = (
            "use the registered id alone (the part after ':'); "
            f"to bring your own env, {OWN_ENV_WAY_IN}."
        )
    elif kind == "string_pattern_mismatch":
        message = "is not allowed here."
        fix = _field_description(loc, wrapper, root)
    else:
        fix = _field_description(loc, wrapper, root)
    if isinstance(value, dict):
        value = None
    return SpecIssue(dotted(loc), message, value, line, column, fix)


def capped(issues: list[SpecIssue]) -> list[SpecIssue]:
    """At most MAX_ISSUES issues: a file that is no spec at all must not be echoed back."""
    if len(issues) <= MAX_ISSUES:
        return issues
    more = SpecIssue(
        "",
        f"... and {len(issues) - MAX_ISSUES} more problems (is this file a spec?).",
        fix="start from specs/cartpole.yaml.",
    )
    return [*issues[:MAX_ISSUES], more]


def validate_data(
    data: Any, positions: dict[PathKey, Position] | None = None, source: str | None = None
) -> ExperimentSpec:
    """Plain data -> ExperimentSpec, or SpecError with every schema error and refusal."""
    positions = positions or {}
    if not isinstance(data, dict):
        raise SpecError([SpecIssue("", f"expected a mapping, got {type(data).__name__}.")], source)
    if is_lm_data(data):
        raise SpecError([LM_ELSEWHERE], source)
    try:
        spec = ExperimentSpec.model_validate(data)
    except ValidationError as exc:
        issues = [issue_from_pydantic(error, positions) for error in exc.errors()]
        beside = problems_beside_schema_errors(data, exc, ExperimentSpec, _problems)
        raise SpecError(capped([*issues, *locate(beside, positions, data)]), source) from None
    problems = _problems(spec)
    problems = problems or [*resource_refusals(spec), *machine_refusals(spec)]
    raise_located(problems, positions, source, data)
    return spec


def _problems(spec: ExperimentSpec) -> list[SpecIssue]:
    """Inconsistencies and refusals of a well-formed spec (one too large a first rollout too:
    it would train past its budget)."""
    over_budget = rollout_over_budget_issue(spec)
    return [*inconsistencies(spec), *refusals(spec), *([over_budget] if over_budget else [])]


def locate(
    problems: list[SpecIssue], positions: dict[PathKey, Position], data: Any = None
) -> list[SpecIssue]:
    """Each problem pointing at its line in the file (if any). One about a field the spec does
    not set says it is the default, and points at the nearest section the spec does write."""
    located = []
    for issue in say_defaults(problems, data):
        path = tuple(issue.path.split("."))
        if data is not None and not written(data, issue.path):
            near = [path[:end] for end in range(len(path) - 1, 0, -1) if path[:end] in positions]
            line, column = positions[near[0]] if near else (None, None)
        else:
            line, column = _position(positions, path)
        located.append(dataclasses.replace(issue, line=line, column=column))
    return located


def raise_located(
    problems: list[SpecIssue],
    positions: dict[PathKey, Position],
    source: str | None,
    data: Any = None,
) -> None:
    """SpecError with every problem, each pointing at its line in the file (if any)."""
    if problems:
        raise SpecError(locate(problems, positions, data), source)


def parse_spec_text(
    text: str, source: str | None, overrides: Iterable[str] = ()
) -> tuple[dict[str, Any], dict[PathKey, Position]]:
    """Size-checked, parsed spec text with `--set` overrides applied (not yet validated)."""
    check_spec_size(len(text.encode("utf-8", "surrogatepass")), source)
    data, positions = parse_yaml(text, source)
    overrides = list(overrides)
    if overrides:
        data = apply_overrides(data, overrides)
        positions = forget_overridden(positions, overrides)
    return data, positions


def load_spec_text(
    text: str, source: str | None = None, overrides: Iterable[str] = ()
) -> ExperimentSpec:
    """Parse, validate and refusal-check spec text (`load_spec` reads a file)."""
    data, positions = parse_spec_text(text, source, overrides)
    return validate_data(data, positions, source)


def forget_overridden(
    positions: dict[PathKey, Position], overrides: list[str]
) -> dict[PathKey, Position]:
    """Errors in a value set by --set must not point at the file line of the value it replaced."""
    paths = [tuple(assignment.partition("=")[0].strip().split(".")) for assignment in overrides]
    kept = {k: pos for k, pos in positions.items() if not any(k[: len(p)] == p for p in paths)}
    kept.update({path: (None, None) for path in paths})
    # Mappings that --set created (absent from the file) have no line either: an error in
    # them must not fall back to the document's line 1.
    for path in paths:
        for end in range(1, len(path)):
            kept.setdefault(path[:end], (None, None))
    return kept


def load_spec(path: str | Path, overrides: Iterable[str] = ()) -> ExperimentSpec:
    """Read, validate and refusal-check a spec file."""
    return load_spec_text(read_spec_text(path), str(path), overrides)


def read_spec_text(
    path: str | Path, what: str = "spec file", example: str = "specs/cartpole.yaml"
) -> str:
    """A spec file's (or another YAML input's, named by `what`) text: a regular file of at
    most 1 MiB in UTF-8, else a SpecError."""
    path = Path(path)
    try:
        raw = read_regular_file(path, MAX_SPEC_BYTES + 1)
    except OSError as exc:
        raise SpecError(
            [
                SpecIssue(
                    "",
                    f"cannot read the {what}: {exc.strerror}.",
                    fix=f"give the path of a {what}, e.g. {example}.",
                )
            ],
            str(path),
        ) from None
    return decode_spec_bytes(raw, str(path))


def read_regular_file(path: Path, limit: int) -> bytes:
    """Up to `limit` bytes of a regular file. Opened non-blocking, so a FIFO with no writer
    cannot hang the reader; FIFOs, devices and sockets are refused (OSError)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):  # before fdopen, which says only "Is a directory" for a folder
        os.close(fd)
        kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file (a FIFO or device?)"
        raise OSError(errno.EINVAL, f"it is {kind}")
    with os.fdopen(fd, "rb") as handle:
        return handle.read(limit)


def dump_spec(spec: ExperimentSpec | LMExperimentSpec) -> str:
    """The resolved spec as YAML (every default filled in); loads back to an equal spec."""
    return yaml.dump(spec.resolved(), Dumper=SpecYamlDumper, sort_keys=False, allow_unicode=True)
