"""Either kind of spec as one type: a union discriminated by `algorithm` (`ppo_lm`: a language
model; anything else: a gymnasium env), and its published JSON Schema (`ppo-platform schema`)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Discriminator, Tag, TypeAdapter

from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.lm import LM_ALGORITHM, LMExperimentSpec
from ppo_platform.spec.workloads import spec_workload

GYMNASIUM_TAG = "gymnasium"


def spec_kind(value: Any) -> str:
    """The union's tag, from the workload table: `ppo_lm` for a language-model spec (data or
    model), else gymnasium."""
    lm = spec_workload(value).spec_type is LMExperimentSpec
    return LM_ALGORITHM if lm else GYMNASIUM_TAG


AnyExperimentSpec = Annotated[
    Annotated[ExperimentSpec, Tag(GYMNASIUM_TAG)] | Annotated[LMExperimentSpec, Tag(LM_ALGORITHM)],
    Discriminator(spec_kind),
]
ANY_SPEC_ADAPTER: TypeAdapter[ExperimentSpec | LMExperimentSpec] = TypeAdapter(AnyExperimentSpec)
SPEC_SCHEMA_DESCRIPTION = (
    "An experiment spec: a gymnasium spec (`algorithm` ppo, ppo_kl or a2c; the default) or a "
    "language-model spec (`algorithm: ppo_lm`), told apart by `algorithm`."
)


def spec_json_schema() -> dict[str, Any]:
    """The published JSON Schema of a spec: one of the two kinds, by `algorithm`."""
    schema = ANY_SPEC_ADAPTER.json_schema()
    return {"title": "Spec", "description": SPEC_SCHEMA_DESCRIPTION, **schema}
