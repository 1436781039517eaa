"""One entry per `algorithm`: its spec (load, validate: `spec/workloads.py`, which the layers
below the planner also read), how it is planned and how it runs.

`run` is the same call for every workload: `run(spec, *, on_progress, cancel, settings,
parent_run_id, tags) -> RunResult`. The trainers are imported when a run starts, never at
import (validate and plan stay free of torch).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ppo_platform.errors import SpecError
from ppo_platform.settings import Settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.workloads import (
    SPEC_WORKLOADS,
    AnySpec,
    SpecWorkload,
    load_any_spec,
    spec_workload,
)
from ppo_platform.training.result import RunResult


class RunFunction(Protocol):
    def __call__(
        self,
        spec: Any,
        *,
        on_progress: Callable[..., Any] | None = None,
        cancel: threading.Event | None = None,
        settings: Settings | None = None,
        parent_run_id: str | None = None,
        tags: dict[str, str] | None = None,
        defer_plot: bool = False,
    ) -> RunResult: ...


@dataclass(frozen=True)
class Workload:
    """A workload: its spec entry, the planner that writes its specs, and its run."""

    spec: SpecWorkload
    plan: Callable[..., Any]  # the planner that writes specs of this workload, with reasons
    run: RunFunction
    # Continue an interrupted run from its last checkpoint (run id -> RunResult); None: the
    # workload keeps no checkpoints and an interrupted run starts over.
    resume: Callable[..., RunResult] | None = None

    @property
    def algorithm(self) -> str:
        return self.spec.algorithm


def _run_gym(spec: Any, **options: Any) -> RunResult:
    from ppo_platform.training.compiled_path import training_path

    if training_path(spec)["training_path"] == "compiled":
        from ppo_platform.training.compiled_batch import run_one  # jax, torch and SB3

        return run_one(spec, **options)
    from ppo_platform.training.runner import run_spec  # torch and SB3

    return run_spec(spec, **options)


def _resume_gym(run_id: str, **options: Any) -> RunResult:
    from ppo_platform.training.runner import resume_run  # torch and SB3

    return resume_run(run_id, **options)


def _run_lm(spec: Any, *, defer_plot: bool = False, **options: Any) -> RunResult:
    del defer_plot  # an LM run draws no plot after it returns
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded at run time
    from ppo_platform.training.lm_runner import run_lm_spec  # torch and transformers

    return run_lm_spec(spec, **options)


def _plan_env(env_id: str, budget: int, use_case: str = "auto", overrides: Any = ()) -> Any:
    """A gymnasium spec for `env_id` (`planner.plan_experiment`)."""
    from ppo_platform.planner import plan_experiment  # gymnasium

    return plan_experiment(env_id, budget, use_case, overrides)


def _plan_lm(model_dir: Any, prompts: Any, budget: int, overrides: Any = (), **paths: Any) -> Any:
    """An LM spec for a model folder and its prompts (`planner.plan_lm_experiment`)."""
    from ppo_platform.planner import plan_lm_experiment

    return plan_lm_experiment(model_dir, prompts, budget, overrides, **paths)


_PLAN_ENV = _plan_env
_PLAN_LM = _plan_lm
WORKLOADS: dict[str, Workload] = {
    "ppo": Workload(SPEC_WORKLOADS["ppo"], _PLAN_ENV, _run_gym, _resume_gym),
    "ppo_kl": Workload(SPEC_WORKLOADS["ppo_kl"], _PLAN_ENV, _run_gym, _resume_gym),
    "a2c": Workload(SPEC_WORKLOADS["a2c"], _PLAN_ENV, _run_gym, _resume_gym),
    "ppo_lm": Workload(SPEC_WORKLOADS["ppo_lm"], _PLAN_LM, _run_lm),
}


def workload_of(spec: Any) -> Workload:
    """The entry of a spec (or spec data) by its `algorithm`."""
    return WORKLOADS[spec_workload(spec).algorithm]


def load_experiment(path: str | Path, overrides: Iterable[str] = (), check_env: bool = True) -> Any:
    """A spec file of any workload, validated; `check_env`: a gymnasium spec's env is also
    made once to check its id and spaces (what `validate` has always done). `compiled: on`
    where the compiled path cannot run the spec is refused here, before any run."""
    spec = load_any_spec(path, overrides)
    if isinstance(spec, ExperimentSpec):
        from ppo_platform.training.compiled_path import uncompilable_issue

        issue = uncompilable_issue(spec)
        if issue is not None:
            raise SpecError([issue], str(path))
    if check_env and isinstance(spec, ExperimentSpec):
        from ppo_platform.envs.ids import check_spec_env  # gymnasium

        check_spec_env(spec, str(path))
    return spec


def run_experiment(
    spec: AnySpec,
    *,
    on_progress: Callable[..., Any] | None = None,
    cancel: threading.Event | None = None,
    settings: Settings | None = None,
    parent_run_id: str | None = None,
    tags: dict[str, str] | None = None,
    defer_plot: bool = False,
) -> RunResult:
    """Train a validated spec of any workload as a new MLflow run (a child of `parent_run_id`
    when given). `defer_plot` (a sweep's warm worker): a gymnasium run's plot is drawn after it
    returns, before its tracking process lets this process go."""
    return workload_of(spec).run(
        spec,
        on_progress=on_progress,
        cancel=cancel,
        settings=settings,
        parent_run_id=parent_run_id,
        tags=tags,
        defer_plot=defer_plot,
    )
