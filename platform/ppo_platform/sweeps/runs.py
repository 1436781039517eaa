"""A sweep's MLflow runs: the parent run (created or resumed) and its members' child runs."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ppo_platform import tracing
from ppo_platform.errors import RunNotFoundError
from ppo_platform.execution.base import describe_error
from ppo_platform.settings import Settings
from ppo_platform.spec.experiment import ExperimentSpec, flatten
from ppo_platform.spec.loader import dump_spec
from ppo_platform.spec.workloads import AnySpec, spec_subject
from ppo_platform.sweeps.expand import SweepMember, sweep_hash
from ppo_platform.tracking import tags as tag
from ppo_platform.tracking.process import use_tracking_process
from ppo_platform.tracking.remote import RemoteRun, run_tags, shared_tracking_process
from ppo_platform.tracking.requests import find_runs, terminate_run
from ppo_platform.workloads import run_experiment, workload_of

if TYPE_CHECKING:
    from ppo_platform.training.progress import ProgressEvent
    from ppo_platform.training.runner import RunResult


LINEAGE_TAGS = (tag.JOB_OWNER, tag.JOB_ID)


def same_lineage(run_tags: Mapping[str, str], lineage: Mapping[str, str]) -> bool:
    """Was a sweep run started for the same owner and job as `lineage` (both absent for the
    CLI)? Only such a parent may be resumed: another owner's run is never continued."""
    return all(run_tags.get(name) == lineage.get(name) for name in LINEAGE_TAGS)


def open_parent_run(
    spec: AnySpec,
    members: list[SweepMember],
    threshold: float | None,
    settings: Settings,
    lineage: Mapping[str, str] | None = None,
) -> tuple[RemoteRun, bool]:
    """Reuse the unfinished parent run of this exact sweep started for the same owner and job
    (`lineage`: the job service's owner and job id tags), or create one tagged with them.
    -> (its handle, resumed). The parent process creates the store and the parent run before
    any worker starts: several processes creating one SQLite database at once race."""
    assert spec.sweep is not None
    lineage = dict(lineage or {})
    digest = sweep_hash(spec)
    uri = settings.tracking_uri
    earlier = find_runs(spec.experiment_name, {tag.KIND: "sweep", tag.SWEEP_HASH: digest}, uri=uri)
    unfinished = [
        r for r in earlier if r["status"] != "FINISHED" and same_lineage(r["tags"], lineage)
    ]
    threshold_text = "" if threshold is None else repr(threshold)
    if unfinished:
        run_id = unfinished[-1]["run_id"]  # the newest
        tags = {tag.THRESHOLD: threshold_text}
        process = shared_tracking_process()
        return RemoteRun.reopen(process, settings, run_id, None, tags, kind="sweep"), True
    tags = {
        tag.RUN_NAME: spec.name,
        tag.KIND: "sweep",
        tag.SWEEP_HASH: digest,
        tag.SWEEP_GRID: json.dumps(spec.sweep.grid),
        tag.SWEEP_VARIANTS: json.dumps(spec.sweep.variants),
        tag.SWEEP_SEEDS: json.dumps(spec.sweep.seeds),
        tag.SWEEP_MEMBERS: str(len(members)),
        tag.ENV_ID: spec_subject(spec),
        tag.ALGORITHM: spec.algorithm,
        tag.SPEC_HASH: spec.spec_hash(),
        tag.THRESHOLD: threshold_text,
        **lineage,
    }
    parent = RemoteRun.open_kind(
        "sweep",
        tags,
        experiment=spec.experiment_name,
        texts={"sweep/spec.yaml": dump_spec(spec)},
        settings=settings,
    )
    return parent, False


def finished_runs(
    experiment: str, parent_run_id: str, settings: Settings
) -> dict[str, dict[str, Any]]:
    """sweep_key -> a FINISHED child run; orphaned RUNNING children are marked KILLED."""
    finished: dict[str, dict[str, Any]] = {}
    uri = settings.tracking_uri
    for run in find_runs(experiment, {}, parent=parent_run_id, uri=uri):
        key = run["tags"].get(tag.SWEEP_KEY)
        if run["status"] == "FINISHED" and key:
            finished[key] = run
        elif run["status"] == "RUNNING":  # its process died with the previous attempt
            terminate_run(run["run_id"], "KILLED", only_running=True, uri=uri)
    return finished


@dataclass(frozen=True)
class MemberFailure:
    """A member whose training raised: the error as text and the FAILED run that records it
    (None only if not even a FAILED run could be created). Returned, not raised, so the run
    id reaches the sweep as data."""

    run_id: str | None
    error: str


def warm_worker(spec: AnySpec, tracking_address: str | None = None) -> None:
    """A sweep worker's start-up, once for every member it trains: the trainer's imports and
    torch's first-use costs, paid by one throwaway update of `spec` (a first member's; an LM
    spec's trainer is only imported) that is tracked nowhere, then its tracking: the
    connection to the sweep's tracking process at `tracking_address`, else a tracking process
    of its own (started first, so that MLflow's import overlaps torch's). Each member seeds
    its own model, so this changes no member's result. A failure here is left to the first
    member, which reports it as data."""
    with contextlib.suppress(Exception):
        if tracking_address is None:
            shared_tracking_process()
        if isinstance(spec, ExperimentSpec):
            from ppo_platform.training.warm import warm_up  # heavy: torch and SB3

            tracing.mark("warm-up: torch and SB3 imported")
            warm_up(spec)
        else:
            import ppo_platform.training.lm_runner  # noqa: F401  (heavy: torch, transformers)
    if tracking_address is not None:
        use_tracking_process(tracking_address)
        with contextlib.suppress(Exception):
            shared_tracking_process()  # waits for the sweep's tracking process to listen


class _RunId:
    """The runner's `on_progress` for a member: keeps the id its `started` event carries."""

    def __init__(self) -> None:
        self.run_id: str | None = None

    def __call__(self, event: ProgressEvent) -> None:
        if event.kind == "started":
            self.run_id = event.run_id


def run_member(
    spec: AnySpec, parent_run_id: str, tags: dict[str, str], settings: Settings
) -> RunResult | MemberFailure:
    """Train one member in a worker process; a failure is recorded as a FAILED child run."""

    tags = {**tags, tag.WORKER_PID: str(os.getpid())}  # which process trained it
    started = _RunId()
    try:
        return run_experiment(
            spec,
            parent_run_id=parent_run_id,
            tags=tags,
            settings=settings,
            on_progress=started,
            defer_plot=True,  # drawn while this worker trains its next member
        )
    except Exception as error:
        message = describe_error(error)
        run_id = record_failure(settings, spec, parent_run_id, tags, message, started.run_id)
        return MemberFailure(run_id, message)


def resume_member(
    spec: AnySpec, parent_run_id: str, tags: dict[str, str], settings: Settings
) -> RunResult | MemberFailure:
    """Run a member again after its worker process or node died: its newest child run (left
    RUNNING, or closed KILLED by its tracking process) continues from its last checkpoint, in
    the same MLflow run; with no checkpoint yet, or a workload that keeps none (an LM run),
    the member trains afresh in a new run."""
    resume = workload_of(spec).resume
    uri = settings.tracking_uri
    mine = find_runs(
        spec.experiment_name, {tag.SWEEP_KEY: tags[tag.SWEEP_KEY]}, parent=parent_run_id, uri=uri
    )
    newest = mine[-1] if mine else None
    if newest is not None and newest["status"] in ("RUNNING", "KILLED"):
        run_id = newest["run_id"]
        try:
            if resume is None:
                raise RunNotFoundError(f"run {run_id} keeps no checkpoints")
            return resume(run_id, settings=settings, defer_plot=True)
        except RunNotFoundError:  # died before its first checkpoint
            terminate_run(run_id, "KILLED", only_running=True, uri=uri)
        except Exception as error:  # the resumed run failed: it is the member's FAILED run
            message = describe_error(error)
            return MemberFailure(
                record_failure(settings, spec, parent_run_id, tags, message, run_id), message
            )
    return run_member(spec, parent_run_id, tags, settings)


def record_failure(
    settings: Settings,
    spec: AnySpec,
    parent_run_id: str,
    tags: dict[str, str],
    message: str,
    run_id: str | None,
) -> str | None:
    """The FAILED child run that records a member's error: `run_id` (the runner's, closed
    FAILED by the runner; closed here if the runner could not) or, when the member failed
    before the runner created a run (an environment that cannot be built, say), a new one."""
    failure = {tag.FAILURE: message[:5000], tag.OUTCOME: "failed"}
    if run_id is None:
        run = RemoteRun.open_kind(
            "training",
            run_tags(spec, parent_run_id, tags),
            experiment=spec.experiment_name,
            params=flatten(spec.resolved()),
            settings=settings,
        )
        run.finish("FAILED", failure)
        return run.run_id
    terminate_run(run_id, "FAILED", failure, only_running=True, uri=settings.tracking_uri)
    return run_id
