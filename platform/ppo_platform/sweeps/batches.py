"""A grid point's seeds trained together, on the compiled path.

Where a grid point's spec trains on the compiled path (`compiled: auto` or `on` with an env it
ports: training/compiled_path.py), the point's seeds still to train are one task: one process
trains them as one compiled program (`compiled_batch.run_members`), each seed its own member
run under the sweep's parent, named and tagged as the member it is, with its own curve, final
evaluation and model. Every other member is a task of its own (sweeps/runs.py). A batch whose
worker died resumes member by member from their checkpoints, on the torch path, as a lone
member does.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from ppo_platform.errors import SpecError, SpecIssue, TrainingError
from ppo_platform.execution.base import Task, TaskResult, describe_error
from ppo_platform.settings import Settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.workloads import AnySpec
from ppo_platform.sweeps.expand import SweepMember
from ppo_platform.sweeps.runs import MemberFailure, record_failure, resume_member
from ppo_platform.tracking import tags as tag
from ppo_platform.tracking.requests import find_runs
from ppo_platform.training.compiled_path import training_path, uncompilable_issue

if TYPE_CHECKING:
    from ppo_platform.training.result import RunResult

BATCH_PREFIX = "batch:"
# One member of a batch task: its sweep key, seed, spec and tags.
Planned = tuple[str, int, ExperimentSpec, dict[str, str]]


def _compiled(spec: AnySpec) -> bool:
    if not isinstance(spec, ExperimentSpec):  # an LM member: never compiled
        return False
    try:
        return training_path(spec)["training_path"] == "compiled"
    except (TrainingError, SpecError):  # `compiled: on` it cannot run: the member says why
        return False


def refuse_uncompilable(members: list[SweepMember], source: str | None = None) -> None:
    """`compiled: on` where the compiled path cannot run a grid point is bad input: refused
    (SpecError naming each such point and why) before any run is created."""
    issues: dict[str, SpecIssue] = {}
    for member in members:
        label = member.point.label
        if not isinstance(member.spec, ExperimentSpec) or label in issues:
            continue
        issue = uncompilable_issue(member.spec, f"grid point {label}")
        if issue is not None:
            issues[label] = issue
    if issues:
        raise SpecError(list(issues.values()), source)


def member_tasks(
    members: list[SweepMember],
    parent_run_id: str,
    lineage: dict[str, str],
    settings: Settings,
    one: Callable[[SweepMember], Task],
) -> list[Task]:
    """The tasks that train `members`: each compiled grid point's seeds as one batch task
    (key `batch:<point index>`), every other member as `one(member)`."""
    by_point: dict[int, list[SweepMember]] = defaultdict(list)
    for member in members:
        by_point[member.point.index].append(member)
    tasks: list[Task] = []
    for index, point_members in by_point.items():
        if len(point_members) > 1 and _compiled(point_members[0].spec):
            planned = [(m.key, m.seed, m.spec, {**m.tags, **lineage}) for m in point_members]
            args = (planned, parent_run_id, settings)
            tasks.append(Task(f"{BATCH_PREFIX}{index}", run_batch, args))
        else:
            tasks.extend(one(m) for m in point_members)
    return tasks


def run_batch(
    planned: list[Planned], parent_run_id: str, settings: Settings
) -> dict[str, RunResult | MemberFailure]:
    """Train a grid point's seeds together in this worker; sweep key -> the member's result,
    or a MemberFailure naming its FAILED run (a diverged seed; every seed if the batch broke)."""
    from ppo_platform.training.compiled_batch import BatchMember, run_members  # jax

    pid = {tag.WORKER_PID: str(os.getpid())}
    batch = [BatchMember(seed, spec, {**tags, **pid}) for _, seed, spec, tags in planned]
    try:
        done = run_members(
            batch, settings=settings, parent_run_id=parent_run_id, defer_plot=True, threads=1
        )  # one thread: the sweep's workers already train in parallel
    except Exception as error:
        return _all_failed(planned, parent_run_id, settings, describe_error(error))
    found: dict[str, RunResult | MemberFailure] = {}
    for key, seed, _, _ in planned:
        if seed in done.results:
            found[key] = done.results[seed]
        else:
            found[key] = MemberFailure(done.run_ids.get(seed), done.failures[seed])
    return found


def _all_failed(
    planned: list[Planned], parent_run_id: str, settings: Settings, message: str
) -> dict[str, RunResult | MemberFailure]:
    """Each member's FAILED run recording why the batch broke: its run if it had one."""
    spec = planned[0][2]
    runs = find_runs(spec.experiment_name, {}, parent=parent_run_id, uri=settings.tracking_uri)
    opened = {run["tags"].get(tag.SWEEP_KEY): run["run_id"] for run in runs}  # newest last
    found: dict[str, RunResult | MemberFailure] = {}
    for key, _, spec, tags in planned:
        run_id = opened.get(key)
        found[key] = MemberFailure(
            record_failure(settings, spec, parent_run_id, tags, message, run_id), message
        )
    return found


def resume_batch(
    planned: list[Planned], parent_run_id: str, settings: Settings
) -> dict[str, RunResult | MemberFailure]:
    """A batch whose worker died: each member from its last checkpoint (resume_member), one
    after another."""
    return {
        key: resume_member(spec, parent_run_id, tags, settings) for key, _, spec, tags in planned
    }


def again(task: Task) -> Task:
    """The task that runs `task` (a batch or a lone member, `run_member`) again after its
    worker died: from the checkpoints."""
    resume = resume_batch if task.fn in (run_batch, resume_batch) else resume_member
    return Task(task.key, resume, task.args, num_gpus=task.num_gpus)


def per_member(result: TaskResult, task: Task) -> list[TaskResult]:
    """`task`'s result as its members' results: a batch's, one per seed (each with the
    batch's pid and times); a lone member's, itself."""
    if task.fn not in (run_batch, resume_batch):
        return [result]
    if not result.ok:  # the batch never ran or its worker was lost: every member shares why
        return [replace(result, key=key) for key, _, _, _ in task.args[0]]
    return [replace(result, key=key, value=value) for key, value in result.value.items()]
