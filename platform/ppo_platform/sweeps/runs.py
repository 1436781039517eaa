"""A sweep's MLflow runs: the parent run (created or resumed) and its members' child runs."""

from __future__ import annotations

import json
import os
import time
from functools import partial
from typing import TYPE_CHECKING, Any

from ppo_platform.errors import RunNotFoundError
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


def run_member(
    spec: ExperimentSpec, parent_run_id: str, tags: dict[str, str], settings: Settings
) -> RunResult:
    """Train one member in a worker process; a failure is recorded as a FAILED child run."""
    from ppo_platform.training.runner import run_spec  # heavy: torch and SB3

    started_ms = int(time.time() * 1000)
    tags = {**tags, tag.WORKER_PID: str(os.getpid())}  # which process trained it
    try:
        return run_spec(spec, parent_run_id=parent_run_id, tags=tags, settings=settings)
    except Exception as error:
        record_failure(settings, spec, parent_run_id, tags, error, started_ms)
        raise


def resume_member(
    spec: ExperimentSpec, parent_run_id: str, tags: dict[str, str], settings: Settings
) -> RunResult:
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
        try:
            return resume_run(newest.info.run_id, settings=settings)
        except RunNotFoundError:  # died before its first checkpoint
            if newest.info.status == "RUNNING":
                retry(partial(client.set_terminated, newest.info.run_id, "KILLED"))
    return run_member(spec, parent_run_id, tags, settings)


def record_failure(
    settings: Settings,
    spec: ExperimentSpec,
    parent_run_id: str,
    tags: dict[str, str],
    error: Exception,
    started_ms: int,
) -> None:
    """Make sure the member's child run exists and is FAILED with the error in a tag.

    The runner closes the runs it created as FAILED itself; a run that failed before the
    runner created one (an environment that cannot be built, say) gets a FAILED run here.
    """
    client = tracking_client(settings.tracking_uri)
    message = f"{type(error).__name__}: {error}"[:5000]
    experiment_id = ensure_experiment(client, spec.experiment_name)  # the parent created it
    mine = [
        run
        for run in child_runs(client, experiment_id, parent_run_id)
        if run.data.tags.get(tag.SWEEP_KEY) == tags[tag.SWEEP_KEY]
        and run.info.start_time >= started_ms
    ]
    if not mine:
        tracker = RunTracker.start(
            settings.tracking_uri, spec, parent_run_id=parent_run_id, tags=tags
        )
        tracker.set_tags({tag.FAILURE: message, tag.OUTCOME: "failed"})
        tracker.finish("FAILED")
        return
    for run in mine:
        if run.info.status == "RUNNING":
            run_id = run.info.run_id
            retry(partial(client.set_tag, run_id, tag.FAILURE, message))
            retry(partial(client.set_terminated, run_id, "FAILED"))
