"""What the doctor knows of a run besides its metrics: read from its spec and its tags, and
the spec the top cause's patch makes (validated like any spec)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ppo_platform.doctor.vocabulary import Failure, Finding, RunFacts
from ppo_platform.envs.solved import solved_return_of
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.lm import LMExperimentSpec
from ppo_platform.spec.overrides import set_dotted
from ppo_platform.spec.workloads import validate_any

# Tags of a failed run (tracking/tags.py spells them; repeated here: the doctor sits beside
# tracking in the layers and reads plain dicts).
FAILURE = "ppo_platform.failure"
FAILURE_TYPE = "ppo_platform.failure.exception_type"
FAILURE_SOURCE = "ppo_platform.failure.source"
FAILURE_KIND = "ppo_platform.failure.kind"
FAILURE_STEP = "ppo_platform.failure.step"
FAILURE_INDEX = "ppo_platform.failure.index"
SOURCES = ("env", "trainer", "unknown")


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def failure_from_tags(tags: Mapping[str, str]) -> Failure | None:
    """The structured failure a failed run's tags record (None: the run did not fail)."""
    message = tags.get(FAILURE)
    if message is None:
        return None
    source = tags.get(FAILURE_SOURCE, "unknown")
    return Failure(
        message=message,
        type=tags.get(FAILURE_TYPE),
        source=source if source in SOURCES else "unknown",  # type: ignore[arg-type]
        step=_int(tags.get(FAILURE_STEP)),
        index=_int(tags.get(FAILURE_INDEX)),
        kind=tags.get(FAILURE_KIND),
    )


def facts_from_spec(
    spec: ExperimentSpec | LMExperimentSpec,
    failure: Failure | None = None,
    continuous: bool | None = None,
) -> RunFacts:
    """A run's facts from its resolved spec (`continuous`: whether its actions are a Box)."""
    common: dict[str, Any] = {
        "algorithm": spec.algorithm,
        "learning_rate": spec.update.learning_rate.start,
        "epochs": spec.update.epochs,
        "gamma": spec.advantage.gamma,
        "clip_epsilon": spec.surrogate.clip_epsilon.start,
        "value_coef": spec.surrogate.value_coef,
        "entropy_coef": spec.surrogate.entropy_coef,
        "failure": failure,
    }
    if isinstance(spec, LMExperimentSpec):
        return RunFacts(
            **common,
            kl_target=spec.lm.kl.target,
            kl_beta=spec.lm.kl.beta,
            max_new_tokens=spec.lm.generation.max_new_tokens,
        )
    return RunFacts(
        **common,
        env_id=spec.env.id,
        n_steps=spec.rollout.n_steps,
        n_envs=spec.env.n_envs,
        normalize_obs=spec.env.normalize.obs,
        normalize_reward=spec.env.normalize.reward,
        total_timesteps=spec.budget.total_timesteps,
        continuous=continuous,
        solved_return=solved_return_of(spec.env.id),
    )


def patched_spec(
    spec: ExperimentSpec | LMExperimentSpec, finding: Finding
) -> ExperimentSpec | LMExperimentSpec:
    """`spec` with `finding`'s patch applied, validated (SpecError if it does not)."""
    data = spec.resolved()
    for path, value in finding.patch.items():
        set_dotted(data, path, value, source="doctor")
    return validate_any(data, source=f"the doctor's patch for {finding.cause}")
