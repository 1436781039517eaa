"""The REST API reference: every route of the API app's OpenAPI document (built in process)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from markdown_table import GENERATED_NOTE, cell, table
from reference_spec import type_text

METHODS = ("get", "post", "put", "patch", "delete")


def openapi_document() -> dict[str, Any]:
    """The app's OpenAPI document, exactly what `/openapi.json` serves (no server started)."""
    from ppo_platform.api.app import create_app

    return create_app().openapi()


def operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(METHOD, path, operation) for every documented route, in the document's order."""
    for path, item in document.get("paths", {}).items():
        for method in METHODS:
            if method in item:
                yield method.upper(), path, item[method]


def parameter_rows(operation: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    return [
        (
            f"`{param['name']}`",
            param.get("in", ""),
            type_text(param.get("schema", {})),
            "yes" if param.get("required") else "no",
            param.get("description") or param.get("schema", {}).get("description", ""),
        )
        for param in operation.get("parameters", [])
    ]


def body_text(operation: dict[str, Any]) -> str:
    body = operation.get("requestBody")
    if not body:
        return ""
    rows = [
        (f"`{media}`", type_text(content.get("schema", {})))
        for media, content in body.get("content", {}).items()
    ]
    required = "required" if body.get("required") else "optional"
    return f"Request body ({required}):\n\n" + table(("content type", "schema"), rows)


def response_rows(operation: dict[str, Any]) -> list[tuple[str, str, str]]:
    rows = []
    for status, response in operation.get("responses", {}).items():
        schemas = [
            type_text(content.get("schema", {})) for content in response.get("content", {}).values()
        ]
        rows.append((f"`{status}`", response.get("description", ""), ", ".join(schemas)))
    return rows


def operation_section(method: str, path: str, operation: dict[str, Any]) -> str:
    parts = [f"## {method} {path}\n"]
    if operation.get("summary"):
        parts.append(f"**{cell(operation['summary'])}**\n")
    if operation.get("description"):
        parts.append(operation["description"].strip() + "\n")
    parts.append(f"Operation id: `{operation.get('operationId', '')}`\n")
    if operation.get("parameters"):
        parts.append(
            table(("parameter", "in", "type", "required", "description"), parameter_rows(operation))
        )
    if operation.get("requestBody"):
        parts.append(body_text(operation))
    parts.append(table(("status", "meaning", "body"), response_rows(operation)))
    return "\n".join(parts)


def schema_section(name: str, schema: dict[str, Any]) -> str:
    parts = [f"### {name}\n"]
    if schema.get("description"):
        parts.append(cell(schema["description"]) + "\n")
    required = set(schema.get("required", []))
    rows = [
        (
            f"`{prop}`",
            type_text(value),
            "yes" if prop in required else "no",
            value.get("description", ""),
        )
        for prop, value in schema.get("properties", {}).items()
    ]
    if rows:
        parts.append(table(("field", "type", "required", "description"), rows))
    elif "enum" in schema:
        parts.append("One of " + type_text(schema) + ".\n")
    return "\n".join(parts)


def openapi_page() -> str:
    document = openapi_document()
    info = document.get("info", {})
    ops = list(operations(document))
    parts = [
        "# REST API\n",
        GENERATED_NOTE,
        f"{cell(info.get('description', ''))} API version {info.get('version', '')}; "
        f"OpenAPI {document.get('openapi', '')}. A running server serves the same document "
        "at `/openapi.json` and an interactive page at `/docs`; the document of this version is "
        "also here as a file: [openapi.json](openapi.json).\n",
        table(
            ("route", "summary"),
            ((f"`{method} {path}`", op.get("summary", "")) for method, path, op in ops),
        ),
    ]
    parts += [operation_section(method, path, op) for method, path, op in ops]
    schemas = document.get("components", {}).get("schemas", {})
    if schemas:
        parts.append("## Schemas\n")
        parts += [schema_section(name, schemas[name]) for name in sorted(schemas)]
    return "\n".join(parts)
