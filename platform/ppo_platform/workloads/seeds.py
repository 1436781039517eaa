"""Many seeds of one spec: `ppo-platform run SPEC --seeds 0-15`. Each seed is an MLflow run of
its own under one parent run (kind `seeds`, which `compare PARENT` scores); on the compiled
path the seeds train together in this process, otherwise one after another.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ppo_platform.errors import TrainingError
from ppo_platform.settings import Settings, get_settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.tracking import tags as tag
from ppo_platform.tracking.remote import RemoteRun
from ppo_platform.training.compiled_path import training_path
from ppo_platform.training.result import RunResult


@dataclass(frozen=True)
class SeedsOutcome:
    """A batch's parent run, each seed's result, and why the seeds that failed did."""

    parent_run_id: str
    path: str
    results: dict[int, RunResult]
    failures: dict[int, str]

    def summary(self) -> str:
        lines = [
            f"{len(self.results)} of {len(self.results) + len(self.failures)} seeds ended "
            f"({self.path} path), parent run {self.parent_run_id} "
            f"(ppo-platform compare {self.parent_run_id}):"
        ]
        lines += [f"  seed {seed}: {result.summary()}" for seed, result in self.results.items()]
        lines += [f"  seed {seed}: failed: {why}" for seed, why in self.failures.items()]
        return "\n".join(lines)


def _parent(spec: ExperimentSpec, seeds: list[int], path: str, settings: Settings) -> RemoteRun:
    tags = {
        tag.RUN_NAME: f"{spec.name}-seeds",
        tag.KIND: "seeds",
        tag.SWEEP_SEEDS: json.dumps(seeds),
        tag.ENV_ID: spec.env.id,
        tag.ALGORITHM: spec.algorithm,
        tag.SPEC_HASH: spec.spec_hash(),
        tag.TRAINING_PATH: path,
    }
    return RemoteRun.open_kind("seeds", tags, experiment=spec.experiment_name, settings=settings)


def run_many(
    spec: ExperimentSpec, seeds: list[int], settings: Settings | None = None, **options: Any
) -> SeedsOutcome:
    """Train `seeds` of `spec`, each its own run under a new parent run of kind `seeds`."""
    settings = settings or get_settings()
    path = training_path(spec)["training_path"]
    parent = _parent(spec, seeds, path, settings)
    with parent:
        if path == "compiled":
            from ppo_platform.training.compiled_batch import run_seeds  # jax, torch and SB3

            done = run_seeds(spec, seeds, settings=settings, parent_run_id=parent.run_id, **options)
            results, failures = done.results, done.failures
        else:
            results, failures = _one_by_one(spec, seeds, settings, parent.run_id, options)
        status = "FINISHED" if not failures else "FAILED"
        ended = {tag.OUTCOME: "completed" if not failures else "failed"}
        if failures:
            ended[tag.FAILURE] = "; ".join(f"seed {s}: {why}" for s, why in failures.items())
        parent.finish(status, ended)
    return SeedsOutcome(parent.run_id, path, results, failures)


def _one_by_one(
    spec: ExperimentSpec,
    seeds: list[int],
    settings: Settings,
    parent_run_id: str,
    options: dict[str, Any],
) -> tuple[dict[int, RunResult], dict[int, str]]:
    from ppo_platform.workloads.registry import run_experiment

    results: dict[int, RunResult] = {}
    failures: dict[int, str] = {}
    for seed in seeds:
        try:
            results[seed] = run_experiment(
                spec.with_seed(seed), settings=settings, parent_run_id=parent_run_id, **options
            )
        except TrainingError as error:  # the run closed FAILED with why; the others go on
            failures[seed] = str(error)
    return results, failures
