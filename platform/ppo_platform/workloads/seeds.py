"""Many seeds of one spec: `ppo-platform run SPEC --seeds 0-15` or `budget.seeds`. Each seed is
an MLflow run of its own under one parent run (kind `seeds`, which `compare PARENT` scores); on
the compiled path the seeds train together in this process, otherwise one after another.

A batch that was stopped (Ctrl-C, SIGTERM, a cancelled or orphaned job) resumes with
`resume_many`: each unfinished seed continues from its last checkpoint, on the torch path (a
compiled seed's checkpoint is a plain SB3 model with its Adam state), one after another; a
seed with no checkpoint yet starts over, a finished one stays as it is.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ppo_platform.errors import RunNotFoundError, TrainingError
from ppo_platform.settings import Settings, get_settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.tracking import tags as tag
from ppo_platform.tracking.remote import RemoteRun, member_tags, shared_tracking_process
from ppo_platform.training.compiled_path import training_path
from ppo_platform.training.result import RunResult

ProgressFor = Callable[[int], Callable[..., Any] | None]  # a seed -> its runs' on_progress


@dataclass(frozen=True)
class SeedsOutcome:
    """A batch's parent run, each seed's result, and why the seeds that failed did."""

    parent_run_id: str
    path: str
    results: dict[int, RunResult]
    failures: dict[int, str]
    not_run: tuple[int, ...] = ()  # seeds a stop left unstarted
    earlier: tuple[int, ...] = ()  # a resumed batch's seeds that had finished before

    @property
    def status(self) -> str:
        """The parent run's status: FAILED if a seed failed, KILLED if one was stopped."""
        if self.failures:
            return "FAILED"
        stopped = self.not_run or any(r.status != "FINISHED" for r in self.results.values())
        return "KILLED" if stopped else "FINISHED"

    def summary(self) -> str:
        ended = len(self.results) + len(self.earlier)
        lines = [
            f"{ended} of {ended + len(self.failures) + len(self.not_run)} seeds ended "
            f"({self.path} path), parent run {self.parent_run_id} "
            f"(ppo-platform compare {self.parent_run_id}):"
        ]
        lines += [f"  seed {seed}: {result.summary()}" for seed, result in self.results.items()]
        lines += [f"  seed {seed}: failed: {why}" for seed, why in self.failures.items()]
        lines += [f"  seed {seed}: not started (stopped before it)" for seed in self.not_run]
        lines += [f"  seed {seed}: finished before the resume" for seed in self.earlier]
        return "\n".join(lines)

    def ended_tags(self) -> dict[str, str]:
        outcome = {"FINISHED": "completed", "FAILED": "failed", "KILLED": "cancelled"}
        ended = {tag.OUTCOME: outcome[self.status]}
        if self.failures:
            ended[tag.FAILURE] = "; ".join(f"seed {s}: {why}" for s, why in self.failures.items())
        return ended


def _parent(
    spec: ExperimentSpec, seeds: list[int], path: str, settings: Settings, tags: dict[str, str]
) -> RemoteRun:
    parent_tags = {
        **tags,
        tag.RUN_NAME: f"{spec.name}-seeds",
        tag.KIND: "seeds",
        tag.SWEEP_SEEDS: json.dumps(seeds),
        tag.ENV_ID: spec.env.id,
        tag.ALGORITHM: spec.algorithm,
        tag.SPEC_HASH: spec.spec_hash(),
        tag.TRAINING_PATH: path,
    }
    return RemoteRun.open_kind(
        "seeds", parent_tags, experiment=spec.experiment_name, settings=settings
    )


def run_many(
    spec: ExperimentSpec,
    seeds: list[int],
    settings: Settings | None = None,
    *,
    on_parent: Callable[[str], None] | None = None,
    progress_for: ProgressFor | None = None,
    **options: Any,
) -> SeedsOutcome:
    """Train `seeds` of `spec`, each its own run under a new parent run of kind `seeds`;
    `on_parent` hears the parent's id as soon as it exists, `progress_for(seed)` gives each
    seed's `on_progress` (else `options["on_progress"]` hears every seed)."""
    settings = settings or get_settings()
    path = training_path(spec)["training_path"]
    parent = _parent(spec, seeds, path, settings, options.get("tags") or {})
    with parent:
        if on_parent is not None:
            on_parent(parent.run_id)
        if progress_for is None:
            progress_for = _everyone(options.pop("on_progress", None))
        if path == "compiled":
            from ppo_platform.training.compiled_batch import run_seeds  # jax, torch and SB3

            done = run_seeds(
                spec,
                seeds,
                settings=settings,
                parent_run_id=parent.run_id,
                progress_for=progress_for,
                **options,
            )
            outcome = SeedsOutcome(parent.run_id, path, done.results, done.failures)
        else:
            pending: list[tuple[int, str | None]] = [(seed, None) for seed in seeds]
            outcome = _one_by_one(spec, pending, settings, parent.run_id, progress_for, options)
        parent.finish(outcome.status, outcome.ended_tags())
    return outcome


def _everyone(on_progress: Callable[..., Any] | None) -> ProgressFor:
    return lambda seed: on_progress


def _one_by_one(
    spec: ExperimentSpec,
    pending: list[tuple[int, str | None]],
    settings: Settings,
    parent_run_id: str,
    progress_for: ProgressFor,
    options: dict[str, Any],
    path: str = "torch",
) -> SeedsOutcome:
    """Each (seed, run to resume or None) in turn; a cancel starts no further seed."""
    from ppo_platform.training.runner import resume_run
    from ppo_platform.workloads.registry import run_experiment

    cancel: threading.Event | None = options.get("cancel")
    results: dict[int, RunResult] = {}
    failures: dict[int, str] = {}
    for index, (seed, resumed) in enumerate(pending):
        if cancel is not None and cancel.is_set():
            left = tuple(s for s, _ in pending[index:])
            return SeedsOutcome(parent_run_id, path, results, failures, left)
        on_progress = progress_for(seed)
        try:
            if resumed is not None:
                results[seed] = resume_run(
                    resumed, on_progress=on_progress, cancel=cancel, settings=settings
                )
                continue
            seed_options = {**options, "tags": member_tags(spec, seed, options.get("tags"))}
            results[seed] = run_experiment(
                spec.with_seed(seed),
                settings=settings,
                parent_run_id=parent_run_id,
                on_progress=on_progress,
                **seed_options,
            )
        except TrainingError as error:  # the run closed FAILED with why; the others go on
            failures[seed] = str(error)
    return SeedsOutcome(parent_run_id, path, results, failures)


def resume_many(
    parent_run_id: str,
    settings: Settings | None = None,
    *,
    progress_for: ProgressFor | None = None,
    **options: Any,
) -> SeedsOutcome:
    """Continue the batch under `parent_run_id`: every seed that did not finish, one after
    another (module docstring); the parent closes with the batch's status."""
    from ppo_platform.tracking.requests import read_sweep
    from ppo_platform.training.resume import owned_run, recorded_folder

    settings = settings or get_settings()
    batch = read_sweep(parent_run_id, (), settings.tracking_uri)
    if batch["parent"]["tags"].get(tag.KIND) != "seeds":
        raise RunNotFoundError(f"run {parent_run_id} is a sweep's parent, not a batch of seeds.")
    seeds = json.loads(batch["parent"]["tags"][tag.SWEEP_SEEDS])
    latest: dict[int, dict[str, Any]] = {}
    for child in sorted(batch["children"], key=lambda c: c["start_time"] or 0):
        latest[int(child["tags"].get(tag.SEED, child["params"].get("budget.seed", -1)))] = child
    if not latest:
        raise RunNotFoundError(
            f"batch {parent_run_id} started no seed's run: nothing to resume; run the spec again."
        )
    process = shared_tracking_process()
    recorded = recorded_folder(process, settings)
    _, spec = owned_run(settings, next(iter(latest.values()))["run_id"], recorded)
    pending: list[tuple[int, str | None]] = []
    earlier: list[int] = []
    failed: dict[int, str] = {}
    for seed in seeds:
        child = latest.get(seed)
        if child is None:
            pending.append((seed, None))
        elif child["status"] == "FINISHED":
            earlier.append(seed)
        elif child["status"] == "FAILED":  # diverged or broke: says why; not tried again
            failed[seed] = child["tags"].get(tag.FAILURE, "failed")
        else:  # KILLED (stopped, or its process died): from its checkpoint, if it has one
            pending.append((seed, child["run_id"] if _resumable(settings, child) else None))
    with RemoteRun.reopen(process, settings, parent_run_id, None, {}, kind="seeds") as parent:
        done = _one_by_one(
            spec, pending, settings, parent_run_id, progress_for or _everyone(None), options
        )
        outcome = replace(done, failures={**failed, **done.failures}, earlier=tuple(earlier))
        parent.finish(outcome.status, outcome.ended_tags())
    return outcome


def _resumable(settings: Settings, child: dict[str, Any]) -> bool:
    from ppo_platform.training.resume import resumable

    try:
        resumable(settings, child["run_id"])
    except RunNotFoundError:
        return False
    return True


def is_batch(run_id: str, settings: Settings | None = None) -> bool:
    """Whether `run_id` is the parent run of a batch of seeds (what `run --resume` resumes
    with `resume_many`)."""
    from ppo_platform.tracking.requests import read_sweep

    settings = settings or get_settings()
    try:
        return read_sweep(run_id, (), settings.tracking_uri)["parent"]["tags"].get(tag.KIND) == (
            "seeds"
        )
    except RunNotFoundError:
        return False
