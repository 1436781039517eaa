"""The workloads a spec can name, keyed by `algorithm`: one table, and the one way from spec
data to a validated spec of the right kind.

Each entry says what its spec is (the pydantic class), how plain data becomes one (schema,
refusal rules, inputs on disk) and how a stored, already-checked spec is read back. The rest of
an entry, how it is planned and run, lives above the training layer
(`ppo_platform.workloads`), keyed by the same names; a test keeps the two tables equal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ppo_platform.errors import SpecIssue
from ppo_platform.settings import Settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.lm import LM_ALGORITHM, LMExperimentSpec
from ppo_platform.spec.lm_inputs import lm_input_issues
from ppo_platform.spec.lm_loader import validate_lm_data
from ppo_platform.spec.loader import parse_spec_text, read_spec_text, validate_data
from ppo_platform.spec.rules import refusals
from ppo_platform.spec.yaml_source import PathKey, Position

AnySpec = ExperimentSpec | LMExperimentSpec
DEFAULT_ALGORITHM = "ppo"


class Validate(Protocol):
    def __call__(
        self,
        data: Any,
        positions: dict[PathKey, Position] | None,
        source: str | None,
        *,
        from_outside: bool,
    ) -> AnySpec: ...


@dataclass(frozen=True)
class SpecWorkload:
    """What a spec of one `algorithm` is and how its data is checked."""

    algorithm: str
    summary: str
    spec_type: type[ExperimentSpec] | type[LMExperimentSpec]
    validate: Validate
    stored: Callable[[Any], AnySpec]  # a job's stored spec, checked when it was submitted
    planned: Callable[[Any], int]  # what a run's progress counts to: env steps, or updates


def _validate_gym(
    data: Any,
    positions: dict[PathKey, Position] | None,
    source: str | None,
    *,
    from_outside: bool,
) -> AnySpec:
    del from_outside  # a gymnasium spec reads no file
    return validate_data(data, positions, source)


def _validate_lm(
    data: Any,
    positions: dict[PathKey, Position] | None,
    source: str | None,
    *,
    from_outside: bool,
) -> AnySpec:
    return validate_lm_data(data, positions, source, from_outside=from_outside)


def _gym(algorithm: str, summary: str) -> SpecWorkload:
    return SpecWorkload(
        algorithm, summary, ExperimentSpec, _validate_gym, validate_data, _env_steps
    )


def _env_steps(spec: ExperimentSpec) -> int:
    return spec.budget.total_timesteps


def _updates(spec: LMExperimentSpec) -> int:
    return spec.budget.updates


SPEC_WORKLOADS: dict[str, SpecWorkload] = {
    "ppo": _gym("ppo", "PPO's clipped surrogate on a gymnasium env (stable-baselines3)"),
    "ppo_kl": _gym("ppo_kl", "PPO with an adaptive KL penalty on a gymnasium env"),
    "a2c": _gym("a2c", "A2C on a gymnasium env, the baseline PPO is compared with"),
    LM_ALGORITHM: SpecWorkload(
        LM_ALGORITHM,
        "token-level PPO on a local language model, with a value head and a KL penalty",
        LMExperimentSpec,
        _validate_lm,
        LMExperimentSpec.model_validate,
        _updates,
    ),
}


def algorithm_of(value: Any) -> str:
    """The `algorithm` plain spec data or a spec names (`ppo` when data leaves it out)."""
    if isinstance(value, dict):
        named = value.get("algorithm", DEFAULT_ALGORITHM)
        return named if isinstance(named, str) else DEFAULT_ALGORITHM
    return str(getattr(value, "algorithm", DEFAULT_ALGORITHM))


def spec_workload(value: Any) -> SpecWorkload:
    """The entry for spec data or a spec. An unknown `algorithm` gets the gymnasium entry,
    whose schema names the field, the value and the algorithms there are."""
    return SPEC_WORKLOADS.get(algorithm_of(value), SPEC_WORKLOADS[DEFAULT_ALGORITHM])


def spec_subject(spec: AnySpec) -> str:
    """What a spec trains, as runs record it (the `env_id` tag): the env id, or `lm:` and the
    policy folder (an LM run has no env)."""
    return spec.env.id if isinstance(spec, ExperimentSpec) else f"lm:{spec.lm.model.policy}"


def validate_any(
    data: Any,
    positions: dict[PathKey, Position] | None = None,
    source: str | None = None,
    *,
    from_outside: bool = False,
) -> AnySpec:
    """Plain data -> the spec of its workload, or SpecError naming every problem."""
    return spec_workload(data).validate(data, positions, source, from_outside=from_outside)


def stored_spec(data: Any) -> AnySpec:
    """A job's stored (resolved) spec, for display: an LM spec's files were checked when it
    was submitted and are not looked at again here."""
    return spec_workload(data).stored(data)


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


def load_any_spec_text(
    text: str, source: str | None = None, overrides: Iterable[str] = (), from_outside: bool = False
) -> AnySpec:
    data, positions = parse_spec_text(text, source, overrides)
    return validate_any(data, positions, source, from_outside=from_outside)


def load_any_spec(path: str | Path, overrides: Iterable[str] = ()) -> AnySpec:
    """Read and validate a spec file of any workload (command line: absolute paths allowed)."""
    return load_any_spec_text(read_spec_text(path), str(path), overrides)


__all__ = [
    "SPEC_WORKLOADS",
    "AnySpec",
    "SpecWorkload",
    "algorithm_of",
    "load_any_spec",
    "load_any_spec_text",
    "spec_issues",
    "spec_subject",
    "spec_workload",
    "stored_spec",
    "validate_any",
]
