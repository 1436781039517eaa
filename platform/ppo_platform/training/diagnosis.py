"""The doctor where runs are: at a run's end from the metrics already in memory, on a stored
run (the CLI, the API), and the failure of a run whose env handed over NaN
(docs/guides/diagnostics.md, "The doctor")."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from ppo_platform.doctor import (
    Diagnosis,
    Failure,
    RunFacts,
    diagnose,
    facts_from_spec,
    failure_from_tags,
)
from ppo_platform.doctor.series import ALIASES
from ppo_platform.errors import RunNotFoundError, SpecError, TrainingError
from ppo_platform.settings import Settings, get_settings
from ppo_platform.spec.names import check_run_id, path_inside
from ppo_platform.spec.workloads import AnySpec, stored_spec
from ppo_platform.spec.yaml_source import parse_yaml
from ppo_platform.tracking import tags as tag
from ppo_platform.tracking.remote import RemoteRun
from ppo_platform.trainers.errors import NonFiniteInputError

# Every metric name the doctor reads: the only ones a run keeps in memory for it.
DOCTOR_METRICS = frozenset(name for names in ALIASES.values() for name, _ in names)
DIAGNOSIS_FILE = "diagnosis.json"


class DoctorMetrics:
    """The doctor's metrics of a run, kept as they are logged (a few floats per update)."""

    def __init__(self) -> None:
        self.series: dict[str, list[tuple[int, float]]] = {}

    def record(self, row: dict[str, float], step: int) -> None:
        for name, value in row.items():
            if name in DOCTOR_METRICS:
                self.series.setdefault(name, []).append((step, value))


def session_diagnosis(
    spec: AnySpec, history: DoctorMetrics, continuous: bool | None, failure: Failure | None = None
) -> Diagnosis:
    """The diagnosis of a run that is ending, from what it logged."""
    return diagnose(history.series, facts_from_spec(spec, failure, continuous))


def cause_hint(spec: AnySpec, history: DoctorMetrics) -> str:
    """What a live alert adds: the doctor's most likely cause so far (empty while the run
    shows none yet: most causes need a few updates of evidence)."""
    top = session_diagnosis(spec, history, None).top
    return f" [doctor: likely {top.cause}: {top.advice}]" if top is not None else ""


def write_diagnosis(diagnosis: Diagnosis, run_dir: Path) -> Path:
    """`diagnosis.json` in the run's folder: `{"causes": [...], "not_judged": [...]}`."""
    path = run_dir / DIAGNOSIS_FILE
    path.write_text(json.dumps(diagnosis.to_dict(), indent=2))
    return path


def input_failure(error: NonFiniteInputError) -> tuple[Failure, dict[str, str]]:
    """The structured failure of a run whose env handed over a NaN or infinite value, and the
    tags that record it."""
    failure = Failure(
        message=str(error),
        type=type(error).__name__,
        source="env",
        step=error.step,
        index=error.index,
        kind=f"non_finite_{error.what}",
    )
    tags = {
        tag.OUTCOME: "env_fault",
        tag.FAILURE: failure.message,
        tag.FAILURE_TYPE: type(error).__name__,
        tag.FAILURE_SOURCE: "env",
        tag.FAILURE_KIND: failure.kind or "",
        tag.FAILURE_STEP: str(error.step),
    }
    if error.index is not None:
        tags[tag.FAILURE_INDEX] = str(error.index)
    return failure, tags


def close_env_fault(
    tracker: RemoteRun, spec: AnySpec, history: DoctorMetrics, error: NonFiniteInputError
) -> TrainingError:
    """Close the run FAILED with its failure as data; the error the user reads: the env's
    fault and where, and the doctor's advice (never a learning rate: no setting of the trainer
    fixes an env's NaN)."""
    failure, tags = input_failure(error)
    diagnosis = session_diagnosis(spec, history, None, failure)
    tracker.log_artifact(write_diagnosis(diagnosis, tracker.run_dir), "diagnostics")
    tags[tag.TOP_CAUSE] = diagnosis.top.cause if diagnosis.top else ""
    tracker.finish("FAILED", tags)
    advice = diagnosis.top.advice if diagnosis.top else "look at the env"
    return TrainingError(f"the env failed at step {error.step}: {error}. {advice}.")


def _stored_spec(settings: Settings, run_id: str) -> AnySpec | None:
    """The resolved spec the run folder keeps (None: no folder on this machine)."""
    path = path_inside(settings.runs_dir, [run_id, "spec.yaml"], "RUN_ID")
    if not path.is_file():
        return None
    try:
        data, _ = parse_yaml(path.read_text(encoding="utf-8"), str(path))
        return stored_spec(data)
    except SpecError:
        return None


def diagnose_stored_run(
    run_id: str, settings: Settings | None = None
) -> tuple[Diagnosis, AnySpec | None]:
    """The diagnosis of a stored run (its metrics, tags and spec) and its spec, if its folder
    is on this machine. BadInputError for a malformed id, RunNotFoundError for an unknown one."""
    from ppo_platform.tracking.reads import stored_run

    settings = settings or get_settings()
    check_run_id(run_id, "RUN_ID")
    record: dict[str, Any] = stored_run(settings.tracking_uri, run_id)
    if record["tags"].get(tag.KIND) in ("sweep", "study"):
        raise RunNotFoundError(
            f"run {run_id} is a {record['tags'][tag.KIND]}'s parent run: give one member's "
            "run id (its report lists each member's top cause)."
        )
    metrics = record["metrics"]
    failure = failure_from_tags(record["tags"])
    spec = _stored_spec(settings, run_id)
    continuous = True if "train/std" in metrics else None
    facts = facts_from_spec(spec, failure, continuous) if spec else RunFacts(failure=failure)
    recorded = _float(record["tags"].get(tag.SOLVED_RETURN))
    if recorded is not None:  # read where the run's env packages were imported
        facts = replace(facts, solved_return=recorded)
    return diagnose(metrics, facts), spec


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None
