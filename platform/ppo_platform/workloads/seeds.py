"""Many seeds of one spec: `ppo-platform run SPEC --seeds 0-15`. Each seed is an MLflow run of
its own under one parent run (kind `seeds`, which `compare PARENT` scores); on the compiled
path the seeds train together in this process, otherwise one after another.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ppo_platform.errors import BadInputError, SpecIssue, TrainingError
from ppo_platform.settings import Settings, get_settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.tracking import tags as tag
from ppo_platform.tracking.remote import RemoteRun
from ppo_platform.training.compiled_path import training_path
from ppo_platform.training.result import RunResult

MAX_SEEDS = 64  # one batch's seeds: each holds its envs, model and MLflow run in this process
MAX_SEED = 2**31 - 1  # budget.seed's bound
_PART = re.compile(r"^(\d+)(?:-(\d+))?$")
SEEDS_FIX = "give seeds as a range `0-15`, a list `0,3,9` or both `0-3,7`: distinct, >= 0"


def _refuse(text: str, message: str) -> BadInputError:
    return BadInputError(
        [SpecIssue("--seeds", message, text, fix=f"{SEEDS_FIX}, at most {MAX_SEEDS}")],
        "--seeds",
    )


def parse_seeds(text: str) -> list[int]:
    """`0-15`, `0,3,9` or `0-3,7` as a list of distinct seeds, in the order given."""
    seeds: list[int] = []
    parts = [part.strip() for part in text.split(",")]
    if not text.strip() or any(not part for part in parts):
        raise _refuse(text, "names no seed (an empty list or an empty item)")
    for part in parts:
        match = _PART.match(part)
        if match is None:
            raise _refuse(text, f"{part!r} is not a seed or a range of seeds (negative?)")
        low, high = int(match[1]), int(match[2] if match[2] is not None else match[1])
        if high < low:
            raise _refuse(text, f"the range {part!r} runs backwards")
        if high > MAX_SEED:
            raise _refuse(text, f"seed {high} is past the largest seed {MAX_SEED}")
        if len(seeds) + high - low + 1 > MAX_SEEDS:
            raise _refuse(text, f"names more than {MAX_SEEDS} seeds")
        seeds.extend(range(low, high + 1))
    repeated = sorted({seed for seed in seeds if seeds.count(seed) > 1})
    if repeated:
        raise _refuse(text, f"names seed(s) {repeated} more than once")
    return seeds


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
        seed_spec = spec.model_copy(
            update={"budget": spec.budget.model_copy(update={"seed": seed})}
        )
        try:
            results[seed] = run_experiment(
                seed_spec, settings=settings, parent_run_id=parent_run_id, **options
            )
        except TrainingError as error:  # the run closed FAILED with why; the others go on
            failures[seed] = str(error)
    return results, failures
