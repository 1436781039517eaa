"""Run a sweep: validate every member, train the unfinished ones in parallel, then report.

One MLflow parent run per sweep and one child run per member; a re-run of the same sweep
reuses the unfinished parent and trains only the members that did not finish.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ppo_platform import tracing
from ppo_platform.envs.ids import check_env_usable
from ppo_platform.execution.base import Executor, Task, TaskResult
from ppo_platform.execution.choose import pool_executor
from ppo_platform.execution.local import run_tasks, worker_count
from ppo_platform.reports import REPORT_KEYS, SweepReport, build_report
from ppo_platform.reports.plots import warm_plotting
from ppo_platform.reports.stats import default_threshold
from ppo_platform.settings import Settings, get_settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.machine import task_gpus
from ppo_platform.spec.workloads import AnySpec
from ppo_platform.sweeps.batches import again as run_again
from ppo_platform.sweeps.batches import member_tasks, per_member, refuse_uncompilable
from ppo_platform.sweeps.events import (
    MemberFinished,
    MemberOutcome,
    MemberRestarted,
    SweepListener,
    SweepStarted,
    SweepWarning,
)
from ppo_platform.sweeps.expand import SweepMember, expand_sweep, grid_points
from ppo_platform.sweeps.runs import (
    MemberFailure,
    finished_runs,
    open_parent_run,
    run_member,
    warm_worker,
)
from ppo_platform.tracking import tags as tag
from ppo_platform.tracking.remote import RemoteRun, shared_tracking_process
from ppo_platform.tracking.requests import read_sweep

if TYPE_CHECKING:
    from ppo_platform.training.runner import RunResult

__all__ = ["MemberOutcome", "SweepResult", "run_sweep"]


@dataclass
class SweepResult:
    parent_run_id: str
    outcomes: list[MemberOutcome]
    seconds: float
    resumed: bool = False
    report: SweepReport | None = field(default=None, repr=False)

    @property
    def failed(self) -> list[MemberOutcome]:
        return [o for o in self.outcomes if o.status != "FINISHED"]

    def summary(self) -> str:
        skipped = sum(o.skipped for o in self.outcomes)
        head = (
            f"sweep finished in {self.seconds:.1f} s: {len(self.outcomes)} runs, "
            f"{len(self.outcomes) - len(self.failed)} finished, {len(self.failed)} failed"
            + (f", {skipped} skipped (finished earlier)" if skipped else "")
            + f"; parent run {self.parent_run_id}"
        )
        return "\n".join([head, *(f"  failed: {o.line()}" for o in self.failed)])


def run_sweep(
    spec: AnySpec,
    *,
    workers: int | None = None,
    settings: Settings | None = None,
    on_event: SweepListener | None = None,
    source: str | None = None,
    report: bool = True,
    lineage: Mapping[str, str] | None = None,
    from_outside: bool = False,
) -> SweepResult:
    """Validate every member, then train the unfinished ones in parallel under one parent run.
    `on_event` receives the sweep's progress as data (`sweeps/events.py`). `lineage` (the job
    service's owner and job id tags) goes on the parent and every member, and only a parent of
    the same lineage is resumed. `from_outside` (the service): members obey its path rules."""
    lineage = dict(lineage or {})
    # Refuses before anything is created or trained.
    members = expand_sweep(spec, source, from_outside=from_outside)
    if isinstance(spec, ExperimentSpec):
        # The base spec's env, before any parent run: an unusable env id is bad input.
        # Members whose variants change env.kwargs are checked as they start (a failing
        # member is recorded FAILED and does not stop the others).
        check_env_usable(spec.env.id, spec.env.kwargs, source)
    refuse_uncompilable(members, source)

    assert spec.sweep is not None
    settings = settings or get_settings()
    tell = on_event or (lambda event: None)
    started = time.perf_counter()
    tracing.mark("sweep: begins")
    n_workers, crowded = worker_count(workers, len(members))
    # Shut down on the way out, also when the parent run cannot be opened.
    with _warm_executor(members[0].spec, settings, n_workers) as executor:
        parent, resumed = open_parent_run(spec, members, _threshold(spec), settings, lineage)
        with parent:  # closed KILLED on an interrupt, FAILED on an error
            parent_run_id = parent.run_id
            outcomes = _finished_earlier(spec, parent_run_id, members, settings) if resumed else {}
            todo = [m for m in members if m.key not in outcomes]
            if crowded:
                tell(SweepWarning(crowded))
            earlier = len(outcomes)
            tell(_started(spec, parent_run_id, len(members), earlier, n_workers, resumed))
            tasks = member_tasks(
                todo,
                parent_run_id,
                lineage,
                settings,
                lambda m: _member_task(m, parent_run_id, {**m.tags, **lineage}, settings),
            )
            collect = _collector(members, tasks, outcomes, len(todo), earlier, tell)
            tracing.mark("sweep: parent run opened, training begins")
            if report:  # the report's matplotlib import, once start-up is over
                threading.Thread(target=warm_plotting, name="warm-plotting", daemon=True).start()
            _train(tasks, executor, settings, collect, tell)
            tracing.mark("sweep: members done")
            ordered = [outcomes[m.key] for m in members]
            result = SweepResult(parent_run_id, ordered, time.perf_counter() - started, resumed)
            _close_parent(parent, result, settings, report)
    return result


def _collector(
    members: list[SweepMember],
    tasks: list[Task],
    outcomes: dict[str, MemberOutcome],
    todo: int,
    earlier: int,
    tell: SweepListener,
) -> Callable[[TaskResult], None]:
    """What hears each task's result: its members' outcomes (a batch's, one per seed) into
    `outcomes`, each told as it is known."""
    by_key = {m.key: m for m in members}
    task_of = {task.key: task for task in tasks}

    def collect(result: TaskResult) -> None:
        for each in per_member(result, task_of[result.key]):
            outcome = _outcome(by_key[each.key], each)
            outcomes[each.key] = outcome
            trained = sum(not o.skipped for o in outcomes.values())
            tell(MemberFinished(outcome, trained, todo, earlier))

    return collect


# Longest Unix socket path (108 bytes with its terminating NUL on Linux), with room to spare.
MAX_SOCKET_PATH = 100


@contextlib.contextmanager
def _warm_executor(first: AnySpec, settings: Settings, n_workers: int) -> Iterator[Executor]:
    """Warm workers, started now: forked from a fork server that imported torch and SB3 once
    (`execution/local.py`), they run one throwaway update of `first` while this process
    creates the store and the parent run; each then trains member
    after member with those imports. Local workers send their runs to this process's tracking
    process (it listens on a socket in a private folder, removed at the end), so the sweep
    imports MLflow and opens the store once."""
    with tempfile.TemporaryDirectory(prefix="ppo-sweep-") as folder:
        address: str | None = os.path.join(folder, "tracking.sock")
        if len(os.fsencode(str(address))) > MAX_SOCKET_PATH:  # a long TMPDIR
            address = None  # each worker starts its own tracking process
        executor = pool_executor(
            settings, n_workers, initializer=warm_worker, initargs=(first, address)
        )
        if address is not None and executor.runs_here:
            shared_tracking_process().listen(address)
        with executor:
            executor.start()
            yield executor


def _started(
    spec: AnySpec,
    parent_run_id: str,
    members: int,
    earlier: int,
    workers: int,
    resumed: bool,
) -> SweepStarted:
    assert spec.sweep is not None
    points, seeds = len(grid_points(spec)), len(spec.sweep.seeds)
    return SweepStarted(spec.name, parent_run_id, members, points, seeds, earlier, workers, resumed)


def _member_task(
    member: SweepMember, parent_run_id: str, tags: dict[str, str], settings: Settings
) -> Task:
    """A member's run as a task, with the GPU its run trains on (`policy.device: cuda`)."""
    args = (member.spec, parent_run_id, tags, settings)
    spec = member.spec
    device = spec.policy.device if isinstance(spec, ExperimentSpec) else None  # an LM run: CPU
    return Task(member.key, run_member, args, num_gpus=task_gpus(device))


def _train(
    tasks: list[Task],
    executor: Executor,
    settings: Settings,
    collect: Callable[[TaskResult], None],
    tell: SweepListener,
) -> None:
    """Train the members; one whose worker process or node died runs again (resumed)."""

    def again(task: Task, lost: TaskResult) -> Task:
        for spec in _specs_of(task):
            tell(MemberRestarted(spec.name, lost.error or "lost"))
        return run_again(task)  # from its last checkpoints, on the resources it had

    run_tasks(
        tasks,
        on_done=collect,
        executor=executor,
        max_attempts=settings.max_attempts,
        again=again,
    )


def _specs_of(task: Task) -> list[AnySpec]:
    """The specs a task trains: a lone member's, or each of a batch's (sweeps/batches.py)."""
    first = task.args[0]
    return [spec for _, _, spec, _ in first] if isinstance(first, list) else [first]


def _threshold(spec: AnySpec) -> float | None:
    """The score a variant must reach: the sweep's, else the env's default (an LM spec has
    none)."""
    assert spec.sweep is not None
    if spec.sweep.threshold is not None or not isinstance(spec, ExperimentSpec):
        return spec.sweep.threshold
    return default_threshold(spec.env.id)


def _finished_earlier(
    spec: AnySpec, parent_run_id: str, members: list[SweepMember], settings: Settings
) -> dict[str, MemberOutcome]:
    """Skipped outcomes for the members an earlier invocation of this sweep finished."""
    finished = finished_runs(spec.experiment_name, parent_run_id, settings)
    outcomes: dict[str, MemberOutcome] = {}
    for member in members:
        run = finished.get(member.key)
        if run is not None:
            score = run["tags"].get(tag.FINAL_EVAL_MEAN)
            outcomes[member.key] = MemberOutcome(
                member, "FINISHED", run["run_id"], float(score) if score else None, skipped=True
            )
    return outcomes


def _close_parent(parent: RemoteRun, result: SweepResult, settings: Settings, report: bool) -> None:
    """Record the failures, publish the report, and end the parent run."""
    parent_run_id = result.parent_run_id
    status = "FINISHED" if not result.failed else "FAILED"
    parent.set_tags({tag.FAILED_RUNS: str(len(result.failed))})
    try:
        if report:
            sweep = read_sweep(parent_run_id, REPORT_KEYS, settings.tracking_uri)
            result.report = build_report(sweep, settings.runs_dir / parent_run_id / "report")
            for path in result.report.files:
                parent.log_artifact(path, "report")
        tracing.mark("sweep: report built")
    finally:  # a report that cannot be built must not leave the parent RUNNING
        parent.finish(status)
        tracing.mark("sweep: parent closed")


def _outcome(member: SweepMember, result: TaskResult) -> MemberOutcome:
    """The member's outcome from its task's result: a RunResult, or a MemberFailure naming the
    FAILED run that records the error (errors as data: no run is looked up afterwards)."""
    if not result.ok:  # the task could not run at all (unpicklable, cancelled, worker lost)
        return MemberOutcome(
            member, "FAILED", error=result.error, seconds=result.seconds, pid=result.pid
        )
    if isinstance(result.value, MemberFailure):
        failure = result.value
        return MemberOutcome(
            member, "FAILED", failure.run_id, None, failure.error, result.seconds, result.pid
        )
    run: RunResult = result.value
    error = None if run.status == "FINISHED" else (run.message or run.outcome)
    return MemberOutcome(
        member, run.status, run.run_id, run.final_eval_mean, error, run.seconds, result.pid
    )
