"""Spec request bodies: YAML (application/yaml, application/x-yaml, text/yaml) or JSON."""

from __future__ import annotations

from typing import Any

from fastapi import HTTPException, Request

from ppo_platform.spec.yaml_source import decode_spec_bytes

SPEC_MEDIA_TYPES = ("application/yaml", "application/x-yaml", "text/yaml", "application/json")
SPEC_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": "An experiment spec as YAML or JSON (JSON is read as YAML).",
        "content": {
            "application/yaml": {"schema": {"type": "string"}},
            "application/x-yaml": {"schema": {"type": "string"}},
            "text/yaml": {"schema": {"type": "string"}},
            "application/json": {"schema": {"type": "object"}},
        },
    }
}


async def read_spec_text(request: Request) -> str:
    """The body as text; 415 for another content type (none given: read as YAML)."""
    media = request.headers.get("content-type", "application/yaml").split(";")[0].strip()
    if media.lower() not in SPEC_MEDIA_TYPES:
        raise HTTPException(
            415, f"content type {media!r} is not a spec; send one of {', '.join(SPEC_MEDIA_TYPES)}."
        )
    return decode_spec_bytes(await request.body(), "request")
