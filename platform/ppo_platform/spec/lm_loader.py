"""Validate `algorithm: ppo_lm` spec data: schema, the shared refusal rules, then its inputs
(the workload table, `spec/workloads.py`, sends LM data here)."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ppo_platform.errors import SpecError
from ppo_platform.settings import Settings
from ppo_platform.spec.lm import LMExperimentSpec
from ppo_platform.spec.lm_inputs import lm_input_issues
from ppo_platform.spec.loader import (
    capped,
    issue_from_pydantic,
    locate,
    raise_located,
)
from ppo_platform.spec.problems import problems_beside_schema_errors
from ppo_platform.spec.rules import refusals
from ppo_platform.spec.yaml_source import PathKey, Position


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
    problems = [*refusals(spec), *lm_input_issues(spec, settings, from_outside)]  # one answer
    raise_located(problems, positions, source, data)
    return spec
