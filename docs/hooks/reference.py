"""MkDocs hook: the reference pages, generated from the code on every build, never committed.

Spec fields come from the spec's JSON Schema, CLI commands from the Typer app, settings from the
pydantic-settings models, and the REST API from the FastAPI app's OpenAPI document (built in
process, no server). A page that cannot be generated fails the build: a reference that silently
went missing would be worse than a red CI.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from reference_cli import cli_page
from reference_openapi import openapi_page
from reference_settings import settings_page
from reference_spec import spec_page

# src path of the page in docs/ -> function returning its markdown.
GENERATED_PAGES = {
    "reference/spec.md": spec_page,
    "reference/cli.md": cli_page,
    "reference/settings.md": settings_page,
    "reference/rest-api.md": openapi_page,
}


def on_files(files: Any, config: Any) -> Any:
    """Add the generated reference pages to the site's files (mkdocs >= 1.6 `File.generated`)."""
    from mkdocs.structure.files import File

    for src_uri, render in GENERATED_PAGES.items():
        existing = files.get_file_from_path(src_uri)
        if existing is not None:  # a committed copy would go stale: the generated one wins
            files.remove(existing)
        files.append(File.generated(config, src_uri, content=render()))
    return files
