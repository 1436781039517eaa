"""Machine-wide memory admission: the dispatcher starts a job only if the estimated memory of
every running job plus its own fits the memory budget, so two jobs that each fit cannot
together take the machine. The estimate is validation's (`spec/resources.py`), per run, times
the runs a job trains at once (a sweep's parallel members, a compiled batch's seeds, and on the
compiled path a sweep's parallel grid points with all their seeds)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from ppo_platform.errors import TrainingError
from ppo_platform.execution.local import default_workers
from ppo_platform.settings import Settings, get_settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.lm import LMExperimentSpec, is_lm_data
from ppo_platform.spec.lm_inputs import lm_run_memory
from ppo_platform.spec.resources import budgets, estimate, known_observation_size
from ppo_platform.training.compiled_path import training_path


def job_memory(spec_data: dict[str, Any], kind: str, settings: Settings | None = None) -> int:
    """Estimated bytes a queued job needs while it runs (observations of unknown size count
    as one float: validation checked each run against the budget with the real size)."""
    spec: ExperimentSpec | LMExperimentSpec
    if is_lm_data(spec_data):
        spec = LMExperimentSpec.model_validate(spec_data)
        per_run = lm_run_memory(spec, settings or get_settings())
    else:
        spec = ExperimentSpec.model_validate(spec_data)
        per_run = estimate(spec, known_observation_size(spec) or 1).memory
    if kind == "sweep" and spec.sweep is not None:
        sweep = spec.sweep
        points = math.prod(len(values) for values in sweep.grid.values())
        points *= max(1, len(sweep.variants))
        if len(sweep.seeds) > 1 and _compiled(spec):  # a worker trains a point's seeds at once
            return per_run * len(sweep.seeds) * max(1, min(points, default_workers()))
        return per_run * max(1, min(points * len(sweep.seeds), default_workers()))
    if kind == "seeds" and isinstance(spec, ExperimentSpec) and _compiled(spec):
        return per_run * len(spec.budget.seeds or [None])  # every seed's envs and model at once
    return per_run


def _compiled(spec: ExperimentSpec | LMExperimentSpec) -> bool:
    if isinstance(spec, LMExperimentSpec):
        return False
    try:
        return training_path(spec)["training_path"] == "compiled"
    except TrainingError:  # `compiled: on` it cannot run: the run fails fast, alone
        return False


class MemoryAdmission:
    """Decides whether one more job fits beside the running ones."""

    def __init__(self, settings: Settings) -> None:
        self.budget = budgets(settings)[0]

    def fits(self, running: Iterable[int], needed: int) -> bool:
        """True if `needed` fits beside `running`; a job alone always starts (validation
        already held it to the budget), so nothing waits forever."""
        running = list(running)
        return not running or sum(running) + needed <= self.budget
