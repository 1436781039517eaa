"""Load a spec from YAML (or a dict) into a validated, refusal-checked `ExperimentSpec`.

YAML is composed into nodes with PyYAML's safe machinery and converted by hand, so that every
value keeps its line and column, duplicate keys and object-constructing tags are errors, and
alias expansion is bounded. Every problem becomes a `SpecIssue` naming field, value and line.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from .errors import SpecError, SpecIssue
from .rules import inconsistencies, refusals
from .spec import ExperimentSpec

MAX_SPEC_BYTES = 1024 * 1024
MAX_NODES = 10_000
# Specs nest 4 levels deep; a recursive alias (`a: &a [*a]`) or 3000 '[' must not reach Python's
# recursion limit.
MAX_DEPTH = 32
Position = tuple[int, int] | tuple[None, None]  # (None, None): set by --set, not on a file line
PathKey = tuple[str | int, ...]

_STANDARD_TAGS = {
    f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null", "map", "seq")
}


# `1e-3` without a dot (YAML 1.2 reads it as a float; PyYAML's 1.1 rules read a string). At
# least one mantissa digit: '.e5' and '+e5' stay strings rather than floats Python cannot parse.
_EXPONENT_FLOAT = re.compile(r"^[-+]?(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)[eE][-+]?\d+$")


class _SpecYamlLoader(yaml.SafeLoader):
    """SafeLoader that also reads `1e-3` as a float."""


class _SpecYamlDumper(yaml.SafeDumper):
    """SafeDumper that quotes strings such as '1e3', which `_SpecYamlLoader` reads as floats."""


for _yaml_class in (_SpecYamlLoader, _SpecYamlDumper):
    _yaml_class.add_implicit_resolver(
        "tag:yaml.org,2002:float", _EXPONENT_FLOAT, list("-+0123456789.")
    )


class _Converter:
    """Turns a composed YAML node tree into plain data plus a path -> (line, column) map."""

    def __init__(self, source: str | None) -> None:
        self.source = source
        self.positions: dict[PathKey, Position] = {}
        self.nodes_seen = 0
        self._scalars = yaml.constructor.SafeConstructor()

    def fail(self, node: yaml.Node | None, path: PathKey, message: str, fix: str) -> SpecError:
        line, column = (
            (node.start_mark.line + 1, node.start_mark.column + 1) if node else (None, None)
        )
        issue = SpecIssue(_dotted(path), message, None, line, column, fix)
        return SpecError([issue], self.source)

    def convert(self, node: yaml.Node, path: PathKey = ()) -> Any:
        self.nodes_seen += 1
        if self.nodes_seen > MAX_NODES:
            raise self.fail(
                node,
                path,
                f"the document expands to more than {MAX_NODES} values "
                "(an alias/anchor expansion bomb?).",
                "write the spec out without nested aliases.",
            )
        if len(path) > MAX_DEPTH:
            raise self.fail(
                node,
                path,
                f"the document nests more than {MAX_DEPTH} levels deep (a recursive alias?).",
                "write the spec out without recursive aliases.",
            )
        self.positions.setdefault(path, (node.start_mark.line + 1, node.start_mark.column + 1))
        if node.tag not in _STANDARD_TAGS:
            raise self.fail(
                node,
                path,
                f"YAML tag {node.tag!r} is not allowed: a spec is plain data.",
                "remove the tag; use plain mappings, lists, strings, numbers and booleans.",
            )
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            return [self.convert(item, (*path, i)) for i, item in enumerate(node.value)]
        return self._scalars.construct_object(node)

    def _mapping(self, node: yaml.MappingNode, path: PathKey) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise self.fail(
                    key_node,
                    path,
                    "YAML merge keys (<<) are not supported.",
                    "write the keys out explicitly.",
                )
            key = self.convert(key_node, path) if isinstance(key_node, yaml.ScalarNode) else None
            if not isinstance(key, str):
                raise self.fail(
                    key_node,
                    path,
                    f"mapping key {key!r} is not a string.",
                    "quote the key, e.g. 'on': ... (YAML reads on/off/yes/no as booleans).",
                )
            if key in result:
                first_line = self.positions[(*path, key)][0]
                raise self.fail(
                    key_node,
                    (*path, key),
                    f"duplicate key (first set on line {first_line}).",
                    "keep one of the two entries.",
                )
            self.positions[(*path, key)] = (
                key_node.start_mark.line + 1,
                key_node.start_mark.column + 1,
            )
            result[key] = self.convert(value_node, (*path, key))
        return result


def _dotted(path: Iterable[str | int]) -> str:
    return ".".join(str(part) for part in path)


def _check_size(n_bytes: int, source: str | None) -> None:
    if n_bytes > MAX_SPEC_BYTES:
        issue = SpecIssue(
            "",
            f"the spec is over {MAX_SPEC_BYTES} bytes (1 MiB), the limit.",
            fix="a spec is a short configuration file; remove embedded data.",
        )
        raise SpecError([issue], source)


def _decode(raw: bytes, source: str | None) -> str:
    _check_size(len(raw), source)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        issue = SpecIssue(
            "",
            f"byte {raw[exc.start]:#04x} is not valid UTF-8.",
            None,
            line,
            column,
            "save the file as UTF-8.",
        )
        raise SpecError([issue], source) from None


def parse_yaml(
    text: str, source: str | None = None
) -> tuple[dict[str, Any], dict[PathKey, Position]]:
    """YAML text -> (plain mapping, positions); SpecError for anything but a plain spec."""
    converter = _Converter(source)
    try:
        nodes = list(yaml.compose_all(text, Loader=_SpecYamlLoader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        issue = SpecIssue(
            "",
            f"YAML syntax error: {exc.problem}.",
            None,
            mark.line + 1 if mark else None,
            mark.column + 1 if mark else None,
            "fix the YAML syntax at this position.",
        )
        raise SpecError([issue], source) from None
    except RecursionError:
        issue = SpecIssue(
            "",
            "the document nests too deeply to read.",
            fix="a spec nests a few levels deep; remove the deep nesting.",
        )
        raise SpecError([issue], source) from None
    except yaml.YAMLError as exc:
        raise SpecError([SpecIssue("", f"YAML error: {exc}.")], source) from None
    if len(nodes) != 1 or nodes[0] is None:
        found = "an empty document" if not nodes or nodes[0] is None else f"{len(nodes)} documents"
        line = column = None
        if len(nodes) > 1 and nodes[1] is not None:  # point at the second document
            line, column = nodes[1].start_mark.line + 1, nodes[1].start_mark.column + 1
        issue = SpecIssue(
            "",
            f"expected one YAML mapping, found {found}.",
            None,
            line,
            column,
            fix="write the spec as one mapping: name: ..., env: ...",
        )
        raise SpecError([issue], source)
    if not isinstance(nodes[0], yaml.MappingNode):
        raise converter.fail(
            nodes[0],
            (),
            "the document is not a mapping.",
            "write the spec as one mapping: name: ..., env: ...",
        )
    data = converter.convert(nodes[0])
    return data, converter.positions


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
    import copy

    result = copy.deepcopy(data)
    for assignment in overrides:
        path, value = parse_override(assignment)
        set_dotted(result, path, value, source="--set")
    return result


def set_dotted(data: dict[str, Any], path: str, value: Any, source: str | None = None) -> None:
    """Set data['a']['b'] = value for path 'a.b', creating mappings on the way."""
    node = data
    parts = path.split(".")
    for depth, part in enumerate(parts[:-1]):
        child = node.setdefault(part, {})
        if isinstance(child, (int, float)) and parts[depth + 1] in {"start", "schedule", "end"}:
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


def _field_model(loc: tuple[str | int, ...]) -> type[BaseModel] | None:
    """The pydantic model that owns the field at `loc[:-1]` (for 'allowed keys' hints)."""
    model: type[BaseModel] = ExperimentSpec
    for part in loc:
        field = model.model_fields.get(str(part))
        if field is None:
            return None
        nested = _model_in(field.annotation)
        if nested is None:
            return None
        model = nested
    return model


def _field_description(loc: tuple[str | int, ...]) -> str | None:
    model = _field_model(loc[:-1]) if loc else None
    field = model.model_fields.get(str(loc[-1])) if model else None
    if field is None or not field.description:
        return None
    return f"expected: {field.description}"


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
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


def _issue_from_pydantic(error: Any, positions: dict[PathKey, Position]) -> SpecIssue:
    loc = tuple(
        part
        for part in error["loc"]
        if not (isinstance(part, str) and part.startswith("function-"))
    )
    line, column = _position(positions, loc)
    kind, message, value, fix = (
        error["type"],
        error["msg"].rstrip(".") + ".",
        error.get("input"),
        None,
    )
    if kind == "extra_forbidden":
        model = _field_model(loc[:-1])
        allowed = sorted(model.model_fields) if model else []
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        message = "unknown key."
        fix = (
            f"did you mean {close[0]!r}? " if close else ""
        ) + f"Allowed keys: {', '.join(allowed)}."
        value = None
    elif kind == "missing":
        message, value, fix = "required field is missing.", None, f"add {_dotted(loc)}."
    elif kind == "finite_number":
        fix = "use a finite number (NaN and infinity are not allowed)."
    elif kind == "string_pattern_mismatch":
        message = "is not allowed here."
        fix = _field_description(loc)
    else:
        fix = _field_description(loc)
    if isinstance(value, dict):
        value = None
    return SpecIssue(_dotted(loc), message, value, line, column, fix)


def validate_data(
    data: Any, positions: dict[PathKey, Position] | None = None, source: str | None = None
) -> ExperimentSpec:
    """Plain data -> ExperimentSpec, or SpecError with every schema error and refusal."""
    positions = positions or {}
    if not isinstance(data, dict):
        raise SpecError([SpecIssue("", f"expected a mapping, got {type(data).__name__}.")], source)
    try:
        spec = ExperimentSpec.model_validate(data)
    except ValidationError as exc:
        issues = [_issue_from_pydantic(error, positions) for error in exc.errors()]
        raise SpecError(issues, source) from None
    problems = [*inconsistencies(spec), *refusals(spec)]
    if problems:
        located = []
        for issue in problems:
            line, column = _position(positions, tuple(issue.path.split(".")))
            located.append(
                SpecIssue(issue.path, issue.message, issue.value, line, column, issue.fix)
            )
        raise SpecError(located, source)
    return spec


def load_spec_text(
    text: str, source: str | None = None, overrides: Iterable[str] = ()
) -> ExperimentSpec:
    """Parse, validate and refusal-check spec text (`load_spec` reads a file)."""
    _check_size(len(text.encode("utf-8", "surrogatepass")), source)
    data, positions = parse_yaml(text, source)
    overrides = list(overrides)
    if overrides:
        data = apply_overrides(data, overrides)
        positions = _forget_overridden(positions, overrides)
    return validate_data(data, positions, source)


def _forget_overridden(
    positions: dict[PathKey, Position], overrides: list[str]
) -> dict[PathKey, Position]:
    """Errors in a value set by --set must not point at the file line of the value it replaced."""
    paths = [tuple(assignment.partition("=")[0].strip().split(".")) for assignment in overrides]
    kept = {k: pos for k, pos in positions.items() if not any(k[: len(p)] == p for p in paths)}
    kept.update({path: (None, None) for path in paths})
    return kept


def load_spec(path: str | Path, overrides: Iterable[str] = ()) -> ExperimentSpec:
    """Read, validate and refusal-check a spec file."""
    path = Path(path)
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_SPEC_BYTES + 1)
    except OSError as exc:
        raise SpecError(
            [SpecIssue("", f"cannot read the spec file: {exc.strerror}.", fix="check the path.")],
            str(path),
        ) from None
    return load_spec_text(_decode(raw, str(path)), str(path), overrides)


def dump_spec(spec: ExperimentSpec) -> str:
    """The resolved spec as YAML (every default filled in); loads back to an equal spec."""
    return yaml.dump(spec.resolved(), Dumper=_SpecYamlDumper, sort_keys=False, allow_unicode=True)
