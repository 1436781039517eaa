"""MkDocs hook: the reference pages, generated from the code on every build, never committed.

Spec fields come from the spec's JSON Schema, CLI commands from the Typer app, settings from the
pydantic-settings models, and the REST API from the FastAPI app's OpenAPI document (built in
process, no server). A page that cannot be generated fails the build: a reference that silently
went missing would be worse than a red CI.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from reference_cli import cli_page
from reference_openapi import openapi_document, openapi_page
from reference_settings import settings_page
from reference_spec import published_schema, spec_page

# src path of the page in docs/ -> function returning its markdown (or JSON, for downloads).
GENERATED_PAGES = {
    "reference/spec.md": spec_page,
    "reference/cli.md": cli_page,
    "reference/settings.md": settings_page,
    "reference/rest-api.md": openapi_page,
    "reference/spec.schema.json": lambda: json.dumps(published_schema(), indent=2),
    "reference/openapi.json": lambda: json.dumps(openapi_document(), indent=2),
}


REPO_ROOT = Path(__file__).resolve().parents[2]
# Benchmark results are written by the scripts in benchmarks/ and committed there, one current
# result per benchmark: the site shows those files as they are, from their one place.
RESULTS = REPO_ROOT / "benchmarks" / "results"
RESULT_SUFFIXES = {".md", ".png"}


def on_files(files: Any, config: Any) -> Any:
    """Add the generated reference pages and the benchmark results to the site's files."""
    from mkdocs.structure.files import File

    for src_uri, render in GENERATED_PAGES.items():
        existing = files.get_file_from_path(src_uri)
        if existing is not None:  # a committed copy would go stale: the generated one wins
            files.remove(existing)
        files.append(File.generated(config, src_uri, content=render()))
    for path in sorted(RESULTS.rglob("*")):
        if path.suffix in RESULT_SUFFIXES:
            src_uri = f"benchmarks/results/{path.relative_to(RESULTS).as_posix()}"
            files.append(File.generated(config, src_uri, abs_src_path=str(path)))
    return files
