"""Read YAML safely into plain data that remembers where every value came from.

YAML is composed into nodes with PyYAML's safe machinery and converted by hand, so that every
value keeps its line and column, duplicate keys and object-constructing tags are errors, and
alias expansion is bounded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import yaml

from ppo_platform.errors import SpecError, SpecIssue

MAX_SPEC_BYTES = 1024 * 1024
MAX_NODES = 10_000
# Specs nest 4 levels deep; a recursive alias (`a: &a [*a]`) or 3000 '[' must not reach Python's
# recursion limit.
MAX_DEPTH = 32
MAX_INT_BITS = 256
Position = tuple[int, int] | tuple[None, None]  # (None, None): set by --set, not on a file line
PathKey = tuple[str | int, ...]

_STANDARD_TAGS = {
    f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null", "map", "seq")
}


# `1e-3` without a dot (YAML 1.2 reads it as a float; PyYAML's 1.1 rules read a string). At
# least one mantissa digit: '.e5' and '+e5' stay strings rather than floats Python cannot parse.
_EXPONENT_FLOAT = re.compile(r"^[-+]?(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)[eE][-+]?\d+$")


# libyaml's C parser composes the same nodes with the same marks about ten times faster than
# the pure-Python one (a spec is read on every API submission); it also bounds nesting at 1000.
_BaseSafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _SpecYamlLoader(_BaseSafeLoader):  # type: ignore[valid-type,misc]
    """SafeLoader (libyaml's when installed) that also reads `1e-3` as a float."""


class SpecYamlDumper(yaml.SafeDumper):
    """SafeDumper that quotes strings such as '1e3', which `_SpecYamlLoader` reads as floats."""


for _yaml_class in (_SpecYamlLoader, SpecYamlDumper):
    _yaml_class.add_implicit_resolver(
        "tag:yaml.org,2002:float", _EXPONENT_FLOAT, list("-+0123456789.")
    )


class _Converter:
    """Turns a composed YAML node tree into plain data plus a path -> (line, column) map."""

    def __init__(self, source: str | None) -> None:
        self.source = source
        self.positions: dict[PathKey, Position] = {}
        self.nodes_seen = 0
        self._node_ids: set[int] = set()
        self.alias_uses = 0  # a node met again is an alias (*name) being expanded
        self._scalars = yaml.constructor.SafeConstructor()

    def fail(self, node: yaml.Node | None, path: PathKey, message: str, fix: str) -> SpecError:
        line, column = (
            (node.start_mark.line + 1, node.start_mark.column + 1) if node else (None, None)
        )
        issue = SpecIssue(dotted(path), message, None, line, column, fix)
        return SpecError([issue], self.source)

    def convert(self, node: yaml.Node, path: PathKey = ()) -> Any:
        self.nodes_seen += 1
        if id(node) in self._node_ids:
            self.alias_uses += 1
        self._node_ids.add(id(node))
        if self.nodes_seen > MAX_NODES and self.alias_uses:
            raise self.fail(
                node,
                path,
                f"the document expands to more than {MAX_NODES} values through its aliases "
                "(an alias/anchor expansion bomb?).",
                "write the spec out without nested aliases.",
            )
        if self.nodes_seen > MAX_NODES:
            raise self.fail(
                node,
                path,
                f"the document holds more than {MAX_NODES} values; a spec is a short "
                "configuration.",
                "remove embedded data (long lists) from the spec.",
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
        try:
            value = self._scalars.construct_object(node)
        except ValueError:  # e.g. an integer of more digits than Python converts (4300)
            value = None
        if (value is None and node.tag.endswith(":int")) or _huge_int(value):
            raise self.fail(
                node,
                path,
                f"the number {node.value[:20]}... ({len(node.value)} characters) is far too "
                "large to be a setting.",
                "use a number of ordinary size.",
            )
        return value

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


def _huge_int(value: Any) -> bool:
    """Integers beyond 2**256 are no setting; printing one (in an error) can itself fail."""
    return isinstance(value, int) and value.bit_length() > MAX_INT_BITS


def dotted(path: Iterable[str | int]) -> str:
    return ".".join(str(part) for part in path)


def check_spec_size(n_bytes: int, source: str | None) -> None:
    if n_bytes > MAX_SPEC_BYTES:
        issue = SpecIssue(
            "",
            f"the spec is over {MAX_SPEC_BYTES} bytes (1 MiB), the limit.",
            fix="a spec is a short configuration file; remove embedded data.",
        )
        raise SpecError([issue], source)


def decode_spec_bytes(raw: bytes, source: str | None) -> str:
    check_spec_size(len(raw), source)
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
        deep = "maximum nesting depth" in (exc.problem or "")  # libyaml's own bound
        issue = SpecIssue(
            "",
            "the document nests too deeply to read."
            if deep
            else f"YAML syntax error: {exc.problem}.",
            None,
            mark.line + 1 if mark else None,
            mark.column + 1 if mark else None,
            "a spec nests a few levels deep; remove the deep nesting."
            if deep
            else "fix the YAML syntax at this position.",
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
