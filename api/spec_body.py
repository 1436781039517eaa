"""Spec request bodies: YAML (application/yaml, application/x-yaml, text/yaml) or JSON."""

from __future__ import annotations

from typing import Any

from fastapi import HTTPException, Request

from ppo_platform.spec.yaml_source import decode_spec_bytes

SPEC_MEDIA_TYPES = ("application/yaml", "application/x-yaml", "text/yaml", "application/json")
YAML_MEDIA_TYPES = SPEC_MEDIA_TYPES[:3]
# One of the two spec kinds, told apart by `algorithm` (`ppo-platform schema` prints the same).
SPEC_SCHEMA = {
    "oneOf": [
        {"$ref": "#/components/schemas/ExperimentSpec"},
        {"$ref": "#/components/schemas/LMExperimentSpec"},
    ]
}
# The JSON body is the spec's own JSON Schema (`ppo-platform schema`), so a generated client
# sends a typed spec. The same document as YAML is declared in an extension, not in `content`:
# client generators (openapi-python-client) skip a YAML body with a warning and drop it.
SPEC_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": "An experiment spec (`ppo-platform schema`). The same document is "
        f"accepted as YAML with Content-Type {', '.join(YAML_MEDIA_TYPES)}; without a "
        "Content-Type the body is read as YAML.",
        "content": {"application/json": {"schema": SPEC_SCHEMA}},
        "x-alternative-content": {media: {"schema": SPEC_SCHEMA} for media in YAML_MEDIA_TYPES},
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
