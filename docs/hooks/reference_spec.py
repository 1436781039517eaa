"""The spec reference: every field of the spec's JSON Schema, by dotted path, with its default."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from markdown_table import GENERATED_NOTE, cell, code, table

CONSTRAINTS = {
    "minimum": ">= {}",
    "exclusiveMinimum": "> {}",
    "maximum": "<= {}",
    "exclusiveMaximum": "< {}",
    "minItems": "at least {} items",
    "maxItems": "at most {} items",
    "minLength": "at least {} characters",
    "maxLength": "at most {} characters",
}

Row = tuple[str, str, str, str, str]


def spec_schema() -> dict[str, Any]:
    """The published JSON Schema of a spec (what `ppo-platform schema` prints)."""
    from ppo_platform.spec.experiment import ExperimentSpec

    return ExperimentSpec.model_json_schema()


def published_schema() -> dict[str, Any]:
    """What `ppo-platform schema` prints: a gymnasium or a language-model spec, by `algorithm`."""
    from ppo_platform.spec.any_spec import spec_json_schema

    return spec_json_schema()


def ref_name(schema: dict[str, Any]) -> str | None:
    ref = schema.get("$ref")
    return ref.rsplit("/", 1)[-1] if isinstance(ref, str) else None


def object_def(schema: dict[str, Any]) -> str | None:
    """The $defs name of the object a property holds (directly or as `X | null`)."""
    if ref_name(schema):
        return ref_name(schema)
    refs = [ref_name(option) for option in schema.get("anyOf", []) if ref_name(option)]
    return refs[0] if len(refs) == 1 else None


def type_text(schema: dict[str, Any]) -> str:
    if "const" in schema:
        return code(schema["const"])
    if "enum" in schema:
        return " | ".join(code(value) for value in schema["enum"])
    if ref_name(schema):
        return str(ref_name(schema))
    for union in ("anyOf", "oneOf"):
        if union in schema:
            return " | ".join(dict.fromkeys(type_text(option) for option in schema[union]))
    if len(schema.get("allOf", [])) == 1:  # a $ref with siblings, as older generators write it
        return type_text(schema["allOf"][0])
    kind = schema.get("type", "any")
    if isinstance(kind, list):  # OpenAPI 3.1 / JSON Schema: ["string", "null"]
        return " | ".join(str(name) for name in kind)
    if kind == "array":
        return f"list of {type_text(schema.get('items', {}))}"
    if kind == "object" and ("additionalProperties" in schema or "patternProperties" in schema):
        return "mapping"
    return str(kind)


def constraints_text(schema: dict[str, Any]) -> str:
    found = [text.format(schema[key]) for key, text in CONSTRAINTS.items() if key in schema]
    for option in schema.get("anyOf", []):
        found += [text.format(option[key]) for key, text in CONSTRAINTS.items() if key in option]
    if "pattern" in schema:
        found.append(f"matches `{schema['pattern']}`")
    return ", ".join(found)


def default_text(schema: dict[str, Any], required: bool) -> str:
    if required:
        return "required"
    if "default" in schema:
        return code(schema["default"])
    return "see below" if object_def(schema) else ""


def field_rows(
    defs: dict[str, Any], schema: dict[str, Any], prefix: str, seen: set[str]
) -> Iterator[Row]:
    """One row per property of an object schema, then the rows of its nested objects."""
    required = set(schema.get("required", []))
    for name, prop in schema.get("properties", {}).items():
        path = f"{prefix}{name}"
        nested = object_def(prop)
        description = prop.get("description") or (defs[nested].get("description") if nested else "")
        yield (
            f"`{path}`",
            type_text(prop) if not nested else f"section ({nested})",
            default_text(prop, name in required),
            constraints_text(prop),
            description,
        )
        if nested and "properties" in defs[nested]:
            seen.add(nested)
            yield from field_rows(defs, defs[nested], f"{path}.", seen)


HEADERS = ("field", "type", "default", "allowed", "description")


def spec_page() -> str:
    schema = spec_schema()
    defs = schema.get("$defs", {})
    seen: set[str] = set()
    parts = [
        "# Spec fields\n",
        GENERATED_NOTE,
        "Every field of an experiment spec, by the dotted path that `--set`, sweeps and "
        "search spaces use. A field you leave out takes its default; `ppo-platform validate "
        "SPEC --show` prints a spec with every default filled in, and `ppo-platform schema` "
        "prints the JSON Schema these tables come from (also here as a file:\n"
        "[spec.schema.json](spec.schema.json)).\n",
        cell(schema.get("description", "")) + "\n",
    ]
    for name, prop in schema.get("properties", {}).items():
        parts.append(f"## {name}\n")
        rows = field_rows(
            defs, {"properties": {name: prop}, "required": schema["required"]}, "", seen
        )
        parts.append(table(HEADERS, list(rows)))
    others = [name for name in sorted(defs) if name not in seen and "properties" in defs[name]]
    if others:
        parts.append("## Other types\n")
        parts.append("Types used inside the sections above (for example a search space entry).\n")
        for name in others:
            parts.append(f"### {name}\n")
            if defs[name].get("description"):
                parts.append(cell(defs[name]["description"]) + "\n")
            parts.append(table(HEADERS, list(field_rows(defs, defs[name], "", seen))))
    parts.append(lm_spec_section())
    return "\n".join(parts)


def lm_spec_section() -> str:
    """The fields of a language-model spec (`algorithm: ppo_lm`), one table: it shares the
    update, surrogate, advantage, diagnostics, tracking and tune sections above and adds `lm`."""
    from ppo_platform.spec.lm import LMExperimentSpec

    schema = LMExperimentSpec.model_json_schema()
    defs, seen = schema.get("$defs", {}), set(spec_schema().get("$defs", {}))
    parts = [
        "## Language-model specs (`algorithm: ppo_lm`)\n",
        "A spec with `algorithm: ppo_lm` trains a local causal language model "
        "([language models](../guides/language-models.md)). Its fields:\n",
        table(HEADERS, list(field_rows(defs, schema, "", seen))),
    ]
    # Types only a language-model spec uses, held in lists (the reward terms of lm.rewards).
    for name in [n for n in sorted(defs) if n not in seen and "properties" in defs[n]]:
        parts.append(f"### {name}\n")
        if defs[name].get("description"):
            parts.append(cell(defs[name]["description"]) + "\n")
        parts.append(table(HEADERS, list(field_rows(defs, defs[name], "", seen))))
    return "\n".join(parts)
