"""Load an `algorithm: ppo_lm` spec: schema, the shared refusal rules, then its inputs."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ppo_platform.errors import SpecError, SpecIssue
from ppo_platform.settings import Settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.lm import LMExperimentSpec, is_lm_data
from ppo_platform.spec.lm_inputs import lm_input_issues
from ppo_platform.spec.loader import (
    capped,
    issue_from_pydantic,
    locate,
    parse_spec_text,
    raise_located,
    read_spec_text,
    validate_data,
)
from ppo_platform.spec.problems import problems_beside_schema_errors
from ppo_platform.spec.rules import refusals
from ppo_platform.spec.yaml_source import PathKey, Position

AnySpec = ExperimentSpec | LMExperimentSpec


def validate_lm_data(
    data: Any,
    positions: dict[PathKey, Position] | None = None,
    source: str | None = None,
    *,
    from_outside: bool = False,
    settings: Settings | None = None,
) -> LMExperimentSpec:
    """Plain data -> LMExperimentSpec, or SpecError: schema, refusals, then the inputs on disk.

    from_outside (the REST API): every path must stay inside the LM folder.
    """
    positions = positions or {}
    try:
        spec = LMExperimentSpec.model_validate(data)
    except ValidationError as exc:
        issues = [issue_from_pydantic(e, positions, LMExperimentSpec) for e in exc.errors()]
        beside = problems_beside_schema_errors(data, exc, LMExperimentSpec, refusals)
        raise SpecError(capped([*issues, *locate(beside, positions, data)]), source) from None
    problems = spec_issues(spec, from_outside=from_outside, settings=settings)  # all in one answer
    raise_located(problems, positions, source, data)
    return spec


def spec_issues(
    spec: AnySpec, *, from_outside: bool, settings: Settings | None = None
) -> list[SpecIssue]:
    """What a schema-valid spec must still pass, under its caller's rules: the refusal rules,
    then an LM spec's inputs on disk (from outside, i.e. the service: only inside the LM folder,
    and nothing read outside it). The one check of a spec and of every value a study's space
    can give it (`tuning/space.py`), so no field can slip past one of them."""
    issues = refusals(spec)
    if isinstance(spec, LMExperimentSpec):
        issues = [*issues, *lm_input_issues(spec, settings, from_outside)]
    return issues


def validate_any(
    data: Any,
    positions: dict[PathKey, Position] | None = None,
    source: str | None = None,
    *,
    from_outside: bool = False,
) -> AnySpec:
    """Either kind of spec, told apart by `algorithm`."""
    if is_lm_data(data):
        return validate_lm_data(data, positions, source, from_outside=from_outside)
    return validate_data(data, positions, source)


def stored_spec(data: Any) -> AnySpec:
    """A job's stored (resolved) spec, for display: an LM spec's files were checked when it
    was submitted and are not looked at again here."""
    if is_lm_data(data):
        return LMExperimentSpec.model_validate(data)
    return validate_data(data)


def load_any_spec_text(
    text: str, source: str | None = None, overrides: Iterable[str] = (), from_outside: bool = False
) -> AnySpec:
    data, positions = parse_spec_text(text, source, overrides)
    return validate_any(data, positions, source, from_outside=from_outside)


def load_any_spec(path: str | Path, overrides: Iterable[str] = ()) -> AnySpec:
    """Read and validate a spec file of either kind (command line: absolute paths allowed)."""
    return load_any_spec_text(read_spec_text(path), str(path), overrides)


__all__ = [
    "AnySpec",
    "SpecIssue",
    "load_any_spec",
    "spec_issues",
    "stored_spec",
    "validate_any",
    "validate_lm_data",
]
