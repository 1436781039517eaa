"""The documentation site builds with --strict, and its generated reference covers the code.

Each test enumerates what the code has (spec fields from the JSON Schema, commands from the
Typer app, settings from the models, routes from the OpenAPI document) on its own and looks for
every item in the built HTML, so a field, command, setting or route added tomorrow without its
reference entry fails here.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
import typer
from pydantic_settings import BaseSettings
from site_build import REPO_ROOT, SiteBuild, squeeze

pytestmark = pytest.mark.slow  # one mkdocs build: ~10 s on a loaded machine

GENERATED = (
    "reference/spec.md",
    "reference/cli.md",
    "reference/settings.md",
    "reference/rest-api.md",
    "reference/spec.schema.json",
    "reference/openapi.json",
)


def test_the_site_builds_with_strict_and_warns_about_nothing(site: SiteBuild) -> None:
    assert (site.folder / "index.html").is_file()
    assert "WARNING" not in site.output, site.output


def test_reference_pages_are_generated_not_committed() -> None:
    for page in GENERATED:
        assert not (REPO_ROOT / "docs" / page).exists(), f"docs/{page} is generated at build time"


def test_the_site_offers_the_spec_schema_and_the_openapi_document(site: SiteBuild) -> None:
    from ppo_platform.api.app import create_app
    from ppo_platform.spec.any_spec import spec_json_schema

    reference = site.folder / "reference"
    schema = json.loads((reference / "spec.schema.json").read_text("utf-8"))
    assert schema == spec_json_schema()
    assert {"ExperimentSpec", "LMExperimentSpec"} <= set(schema["$defs"])
    document = json.loads((reference / "openapi.json").read_text("utf-8"))
    assert document == json.loads(json.dumps(create_app().openapi()))


def spec_fields(schema: dict[str, Any]) -> dict[str, str]:
    """Field name -> description for every property of the spec and of every type it uses."""
    objects = [schema, *schema.get("$defs", {}).values()]
    return {
        name: prop.get("description", "")
        for obj in objects
        for name, prop in obj.get("properties", {}).items()
    }


def test_every_spec_field_appears_with_its_description(site: SiteBuild) -> None:
    from ppo_platform.spec.experiment import ExperimentSpec
    from ppo_platform.spec.lm import LMExperimentSpec

    schema = ExperimentSpec.model_json_schema()
    codes, text = site.code_spans("reference/spec"), site.squeezed("reference/spec")
    fields = spec_fields(schema)
    assert {"name", "env", "epochs", "clip_epsilon", "gae_lambda", "space"} <= set(fields)
    # A language-model spec's fields (`algorithm: ppo_lm`) are named too.
    lm_fields = spec_fields(LMExperimentSpec.model_json_schema())
    assert {"lm", "model", "prompts_per_update", "reward_model"} <= set(lm_fields)
    unnamed = [n for n in lm_fields if not any(c == n or c.endswith(f".{n}") for c in codes)]
    assert not unnamed, f"language-model spec fields missing from the reference: {unnamed}"
    for name, description in fields.items():
        assert any(code == name or code.endswith(f".{name}") for code in codes), name
        assert squeeze(description) in text, (name, description)
    # A field that holds a value (not a section) says what it means.
    undescribed = [
        name
        for obj in [schema, *schema["$defs"].values()]
        for name, prop in obj.get("properties", {}).items()
        if not prop.get("description") and "$ref" not in prop
    ]
    assert not undescribed, f"spec fields without a description: {undescribed}"
    # Dotted paths as --set takes them, with their defaults.
    assert {"update.epochs", "surrogate.clip_epsilon.start", "env.normalize.obs"} <= codes
    row = site.text("reference/spec").split("update.epochs", 1)[1][:80]
    assert row.split()[:2] == ["integer", "10"], row


def cli_paths(command: Any, path: tuple[str, ...] = ()) -> list[str]:
    """`ppo-platform <group> <command>` for every leaf command (Typer vendors click: a group
    is what has `commands`)."""
    if not hasattr(command, "commands"):
        return [" ".join(("ppo-platform", *path))]
    return [
        found
        for name, sub in command.commands.items()
        if not sub.hidden
        for found in cli_paths(sub, (*path, name))
    ]


def test_every_cli_command_appears_with_its_options(site: SiteBuild) -> None:
    from ppo_platform.cli import app

    root = typer.main.get_command(app)
    commands = cli_paths(root)
    assert {"ppo-platform run", "ppo-platform plan", "ppo-platform keys create"} <= set(commands)
    headings = site.headings("reference/cli", 2)
    assert sorted(h for h in headings if h.startswith("ppo-platform ")) == sorted(commands)
    # Each command's section names all its options.
    sections = site.sections("reference/cli")
    assert list(sections) == headings
    for command in commands:
        for param in command_at(root, command).params:
            for option in param.opts if param.param_type_name == "option" else []:
                assert option in sections[command].split(), (command, option)
    assert "--resume" in sections["ppo-platform run"].split()
    # Exit codes come from the one error table.
    assert "KeyboardInterrupt" in sections["Exit codes"] and "`130`" not in sections["Exit codes"]
    for code in ("0", "1", "2", "3", "130", "143"):
        assert code in sections["Exit codes"].split(), code


def command_at(root: Any, full_name: str) -> Any:
    for name in full_name.split()[1:]:
        root = root.commands[name]
    return root


def settings_models() -> list[type[BaseSettings]]:
    """Every BaseSettings subclass in the source, found by parsing it (no import by guesswork)."""
    models = []
    for root, prefix in ((REPO_ROOT / "platform", ""), (REPO_ROOT / "api", "ppo_platform.api.")):
        for path in root.rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            names = [
                node.name
                for node in ast.walk(tree)
                if isinstance(node, ast.ClassDef)
                and any(getattr(base, "id", "") == "BaseSettings" for base in node.bases)
            ]
            if names:
                module_name = prefix + ".".join(path.relative_to(root).with_suffix("").parts)
                module = importlib.import_module(module_name.removesuffix(".__init__"))
                models += [getattr(module, name) for name in names]
    return models


def setting_variables() -> dict[str, str]:
    variables = {}
    for model in settings_models():
        prefix = model.model_config.get("env_prefix", "")
        for name, field in model.model_fields.items():
            alias = field.validation_alias
            variable = alias if isinstance(alias, str) else f"{prefix}{name}".upper()
            variables[variable] = field.description or ""
    return variables


def test_every_setting_appears_as_its_environment_variable(site: SiteBuild) -> None:
    variables = setting_variables()
    assert {"PPO_PLATFORM_HOME", "MLFLOW_TRACKING_URI", "PPO_PLATFORM_JOBS_DATABASE_URL"} <= set(
        variables
    )
    codes, text = site.code_spans("reference/settings"), site.squeezed("reference/settings")
    for variable, description in variables.items():
        assert variable in codes, variable
        assert description, f"setting {variable} has no description"
        assert squeeze(description) in text, (variable, description)


def test_every_variable_the_source_names_is_in_the_settings_reference(site: SiteBuild) -> None:
    named = set()
    for folder in ("platform", "api", "trainers"):
        for path in (REPO_ROOT / folder).rglob("*.py"):
            named |= set(
                re.findall(r"[\"'](PPO_PLATFORM_[A-Z0-9_]+)[\"']", path.read_text("utf-8"))
            )
    assert {"PPO_PLATFORM_TRACE_TIMES", "PPO_PLATFORM_API_KEY"} <= named
    codes = site.code_spans("reference/settings")
    missing = sorted(named - codes)
    assert not missing, f"document {missing} in a settings model or in DIRECT_VARIABLES"


def test_every_route_appears_with_its_status_codes(site: SiteBuild) -> None:
    from ppo_platform.api.app import create_app

    document = create_app().openapi()
    sections = site.sections("reference/rest-api")
    routes = 0
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            routes += 1
            heading = f"{method.upper()} {path}"
            assert heading in sections, heading
            words = sections[heading].split()
            assert operation.get("operationId", "") in words, heading
            for status in operation["responses"]:
                assert status in words, (heading, status)
    assert routes >= 10
    assert "POST /v1/experiments" in sections


def test_getting_started_links_into_the_reference(site: SiteBuild) -> None:
    page = site.page("getting-started")
    for target in ("reference/spec/", "reference/cli/", "reference/rest-api/"):
        assert target in page, target


def test_hook_sources_stay_out_of_the_site(site: SiteBuild) -> None:
    assert not list(Path(site.folder).rglob("*.py"))
