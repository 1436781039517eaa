"""A sweep's MLflow runs: the parent run (created or resumed) and its members' child runs."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from ppo_platform.errors import RunNotFoundError
from ppo_platform.execution.base import describe_error
from ppo_platform.settings import Settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.loader import dump_spec
from ppo_platform.sweeps.expand import SweepMember, sweep_hash
from ppo_platform.tracking import tags as tag
from ppo_platform.tracking.gateway import retry, tracking_client
from ppo_platform.tracking.liveness import claim_run, owner_tags
from ppo_platform.tracking.queries import child_runs, search_all
from ppo_platform.tracking.tracker import RunTracker, ensure_experiment

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

    from ppo_platform.training.progress import ProgressEvent
    from ppo_platform.training.runner import RunResult


def open_parent_run(
    client: MlflowClient,
    experiment_id: str,
    spec: ExperimentSpec,
    members: list[SweepMember],
    threshold: float | None,
) -> tuple[str, bool]:
    """Reuse the unfinished parent run of this exact sweep, or create one. -> (run_id, resumed)."""
    assert spec.sweep is not None
    digest = sweep_hash(spec)
    earlier = search_all(
        client,
        experiment_id,
        f"tags.`{tag.KIND}` = 'sweep' and tags.`{tag.SWEEP_HASH}` = '{digest}'",
    )
    unfinished = sorted(
        (r for r in earlier if r.info.status != "FINISHED"),
        key=lambda r: r.info.start_time,
        reverse=True,
    )
    threshold_text = "" if threshold is None else repr(threshold)
    if unfinished:
        run_id = unfinished[0].info.run_id
        retry(lambda: client.update_run(run_id, status="RUNNING"))
        claim_run(client, run_id)
        retry(partial(client.set_tag, run_id, tag.THRESHOLD, threshold_text))
        return run_id, True
    tags = {
        tag.RUN_NAME: spec.name,
        tag.KIND: "sweep",
        tag.SWEEP_HASH: digest,
        tag.SWEEP_GRID: json.dumps(spec.sweep.grid),
        tag.SWEEP_VARIANTS: json.dumps(spec.sweep.variants),
        tag.SWEEP_SEEDS: json.dumps(spec.sweep.seeds),
        tag.SWEEP_MEMBERS: str(len(members)),
        tag.ENV_ID: spec.env.id,
        tag.ALGORITHM: spec.algorithm,
        tag.SPEC_HASH: spec.spec_hash(),
        tag.THRESHOLD: threshold_text,
        **owner_tags(),
    }
    run = retry(lambda: client.create_run(experiment_id, tags=tags))
    retry(lambda: client.log_text(run.info.run_id, dump_spec(spec), "sweep/spec.yaml"))
    return run.info.run_id, False


def finished_runs(client: MlflowClient, experiment_id: str, parent_run_id: str) -> dict[str, Any]:
    """sweep_key -> a FINISHED child run; orphaned RUNNING children are marked KILLED."""
    finished: dict[str, Any] = {}
    for run in child_runs(client, experiment_id, parent_run_id):
        key = run.data.tags.get(tag.SWEEP_KEY)
        if run.info.status == "FINISHED" and key:
            finished[key] = run
        elif run.info.status == "RUNNING":  # its process died with the previous attempt
            retry(partial(client.set_terminated, run.info.run_id, "KILLED"))
    return finished


@dataclass(frozen=True)
class MemberFailure:
    """A member whose training raised: the error as text and the FAILED run that records it
    (None only if not even a FAILED run could be created). Returned, not raised, so the run
    id reaches the sweep as data."""

    run_id: str | None
    error: str


class _RunId:
    """The runner's `on_progress` for a member: keeps the id its `started` event carries."""

    def __init__(self) -> None:
        self.run_id: str | None = None

    def __call__(self, event: ProgressEvent) -> None:
        if event.kind == "started":
            self.run_id = event.run_id


def run_member(
    spec: ExperimentSpec, parent_run_id: str, tags: dict[str, str], settings: Settings
) -> RunResult | MemberFailure:
    """Train one member in a worker process; a failure is recorded as a FAILED child run."""
    from ppo_platform.training.runner import run_spec  # heavy: torch and SB3

    tags = {**tags, tag.WORKER_PID: str(os.getpid())}  # which process trained it
    started = _RunId()
    try:
        return run_spec(
            spec, parent_run_id=parent_run_id, tags=tags, settings=settings, on_progress=started
        )
    except Exception as error:
        message = describe_error(error)
        run_id = record_failure(settings, spec, parent_run_id, tags, message, started.run_id)
        return MemberFailure(run_id, message)


def resume_member(
    spec: ExperimentSpec, parent_run_id: str, tags: dict[str, str], settings: Settings
) -> RunResult | MemberFailure:
    """Run a member again after its worker process or node died: its newest child run (left
    RUNNING, or closed KILLED by its tracking process) continues from its last checkpoint, in
    the same MLflow run; with no checkpoint yet the member trains afresh in a new run."""
    from ppo_platform.training.runner import resume_run  # heavy: torch and SB3

    client = tracking_client(settings.tracking_uri)
    experiment_id = ensure_experiment(client, spec.experiment_name)
    mine = [
        run
        for run in child_runs(client, experiment_id, parent_run_id)
        if run.data.tags.get(tag.SWEEP_KEY) == tags[tag.SWEEP_KEY]
    ]
    newest = max(mine, key=lambda run: run.info.start_time) if mine else None
    if newest is not None and newest.info.status in ("RUNNING", "KILLED"):
        run_id = newest.info.run_id
        try:
            return resume_run(run_id, settings=settings)
        except RunNotFoundError:  # died before its first checkpoint
            if newest.info.status == "RUNNING":
                retry(partial(client.set_terminated, run_id, "KILLED"))
        except Exception as error:  # the resumed run failed: it is the member's FAILED run
            message = describe_error(error)
            return MemberFailure(
                record_failure(settings, spec, parent_run_id, tags, message, run_id), message
            )
    return run_member(spec, parent_run_id, tags, settings)


def record_failure(
    settings: Settings,
    spec: ExperimentSpec,
    parent_run_id: str,
    tags: dict[str, str],
    message: str,
    run_id: str | None,
) -> str | None:
    """The FAILED child run that records a member's error: `run_id` (the runner's, closed
    FAILED by the runner; closed here if the runner could not) or, when the member failed
    before the runner created a run (an environment that cannot be built, say), a new one."""
    message = message[:5000]
    if run_id is None:
        tracker = RunTracker.start(
            settings.tracking_uri, spec, parent_run_id=parent_run_id, tags=tags
        )
        tracker.set_tags({tag.FAILURE: message, tag.OUTCOME: "failed"})
        tracker.finish("FAILED")
        return tracker.run_id
    client = tracking_client(settings.tracking_uri)
    if retry(partial(client.get_run, run_id)).info.status == "RUNNING":
        retry(partial(client.set_tag, run_id, tag.FAILURE, message))
        retry(partial(client.set_terminated, run_id, "FAILED"))
    return run_id
