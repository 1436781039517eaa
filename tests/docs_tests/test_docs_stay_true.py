"""What the hand-written pages name exists: commands, spec field paths, complete example specs.

The reference pages are generated, so they cannot go stale; these checks catch a guide or the
README that still names a command, a field or a spec shape the code no longer has.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml
from site_build import REPO_ROOT

PAGES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]
CODE_SPAN = re.compile(r"`([^`\n]+)`")
FENCED = re.compile(r"```(\w*)\n(.*?)\n```", flags=re.S)
COMMAND = re.compile(r"\bppo-platform ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?")


def page_texts() -> list[tuple[str, str]]:
    return [(str(path.relative_to(REPO_ROOT)), path.read_text("utf-8")) for path in PAGES]


def test_every_command_the_pages_name_exists() -> None:
    from ppo_platform.cli import app

    root = typer.main.get_command(app)
    named = 0
    for page, text in page_texts():
        for match in COMMAND.finditer(text):
            command = root.commands.get(match[1])
            assert command is not None, f"{page} names `ppo-platform {match[1]}`"
            named += 1
            if hasattr(command, "commands") and match[2]:  # a group: its subcommand too
                assert match[2] in command.commands, f"{page}: ppo-platform {match[1]} {match[2]}"
    assert named > 20


def resolve(schema: dict[str, Any], node: dict[str, Any], parts: list[str]) -> bool:
    """Whether a dotted path leads somewhere in the spec's JSON Schema."""
    if not parts:
        return True
    for option in node.get("anyOf", []):
        if "$ref" in option:
            node = option
    if "$ref" in node:
        node = schema["$defs"][node["$ref"].rsplit("/", 1)[-1]]
    if isinstance(node.get("additionalProperties"), dict) or "patternProperties" in node:
        return True  # a mapping (env.kwargs, sweep.grid, tune.space): any key below it
    properties = node.get("properties", {})
    return parts[0] in properties and resolve(schema, properties[parts[0]], parts[1:])


def test_every_spec_field_path_the_pages_name_exists() -> None:
    """A dotted path must exist in the gymnasium spec or in the `ppo_lm` spec."""
    from ppo_platform.spec.experiment import ExperimentSpec
    from ppo_platform.spec.lm import LMExperimentSpec

    schemas = [ExperimentSpec.model_json_schema(), LMExperimentSpec.model_json_schema()]
    sections = "|".join({name for schema in schemas for name in schema["properties"]})
    path = re.compile(rf"^(?:{sections})(?:\.[a-z_]+)+")
    checked = 0
    for page, text in page_texts():
        for span in CODE_SPAN.findall(text):
            found = path.match(span.strip())
            if found:
                checked += 1
                parts = found[0].split(".")
                assert any(resolve(s, s, parts) for s in schemas), f"{page}: `{found[0]}`"
    assert checked > 30


MINIMAL_SPEC = {"name": "docs-example", "env": "CartPole-v1"}


def example_specs() -> list[tuple[str, dict[str, Any]]]:
    """YAML blocks in the pages made only of spec sections: whole specs, or parts of one (a
    `sweep:` or `tune:` section) that are checked inside a minimal spec."""
    from ppo_platform.spec.experiment import ExperimentSpec

    sections = set(ExperimentSpec.model_json_schema()["properties"])
    found = []
    for page, text in page_texts():
        for language, body in FENCED.findall(text):
            data = yaml.safe_load(body) if language == "yaml" else None
            if isinstance(data, dict) and data and set(data) <= sections:
                found.append((page, {**MINIMAL_SPEC, **data}))
    return found


@pytest.mark.parametrize("page, spec", example_specs())
def test_every_example_spec_validates(page: str, spec: dict[str, Any], tmp_path: Path) -> None:
    from ppo_platform.spec.loader import load_spec

    path = tmp_path / "example.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    load_spec(path)  # raises SpecError naming the field, value and fix


def test_the_examples_are_found() -> None:
    pages = [page for page, _ in example_specs()]
    assert len(pages) >= 6, pages
    assert {"docs/guides/sweeps.md", "docs/guides/tuning.md"} <= set(pages)


def test_a_path_the_spec_does_not_have_is_caught() -> None:
    from ppo_platform.spec.experiment import ExperimentSpec

    schema = ExperimentSpec.model_json_schema()
    for known in ("update.epochs", "surrogate.clip_epsilon.start", "sweep.grid.update.epochs"):
        assert resolve(schema, schema, known.split(".")), known
    for unknown in ("update.bogus", "update.learning_rate.bogus", "env.normalize.obs.x"):
        assert not resolve(schema, schema, unknown.split(".")), unknown
