"""Run one spec: build envs and model, train with diagnostics, evaluate, checkpoint, track
(the session itself: training/session.py).

A library function first: the CLI and the REST API are thin shells around `run_spec` and
`resume_run`. Progress goes to a callback; a `threading.Event` cancels cleanly.
"""

from __future__ import annotations

import threading

from ppo_platform import tracing
from ppo_platform.envs.build import EnvMaker, build_eval_env, build_train_env
from ppo_platform.execution.threads import pin_threads
from ppo_platform.settings import Settings, get_settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.tracking import tags as tag
from ppo_platform.tracking.remote import (
    RemoteRun,
    runs_closed_on_interrupt,
    shared_tracking_process,
)
from ppo_platform.training.algorithms import build_model, fast_paths_tag, load_model
from ppo_platform.training.compiled_path import training_path
from ppo_platform.training.result import RunResult as RunResult  # re-exported for callers
from ppo_platform.training.resume import recorded_folder, resumable
from ppo_platform.training.resume import run_folder as run_folder  # re-exported for callers
from ppo_platform.training.session import ProgressCallback
from ppo_platform.training.session import TrainingSession as TrainingSession  # re-exported


def _prepare(settings: Settings | None) -> Settings:
    settings = settings or get_settings()
    pin_threads(settings.torch_threads)
    return settings


def run_spec(
    spec: ExperimentSpec,
    *,
    on_progress: ProgressCallback | None = None,
    cancel: threading.Event | None = None,
    settings: Settings | None = None,
    parent_run_id: str | None = None,
    tags: dict[str, str] | None = None,
    make_env: EnvMaker | None = None,
    defer_plot: bool = False,
) -> RunResult:
    """Train `spec` from scratch as a new MLflow run. Raises TrainingError if it diverges.

    `make_env` (notebooks): one env, made instead of `spec.env.id` (see build_train_env).
    `defer_plot` (a sweep's warm worker): the run's plot is drawn after it returns, before its
    tracking process lets this process go; otherwise the returned run is whole. MLflow is
    written by this process's tracking process (`tracking/service.py`), never imported here.
    """
    process = shared_tracking_process()  # first: its MLflow import overlaps torch's work
    settings = _prepare(settings)
    tracing.mark("run_spec: begins")
    path = training_path(spec, make_env)  # a spec compiled: on cannot run is refused
    # Fails on an unknown env id (or an unshippable make_env) before any run is created.
    env = build_train_env(spec, make_env=make_env)
    eval_env = build_eval_env(spec, make_env)
    tracing.mark("run_spec: envs built")
    model = build_model(spec, env)
    tracing.mark("run_spec: model built")
    tags = {**(tags or {}), **fast_paths_tag(model)}
    if spec.compiled != "off":  # asked for, not taken: the resolved setup says why
        tags[tag.TRAINING_PATH] = "torch"
    # Training starts while the tracking process creates the run (its MLflow import and store
    # open overlap torch's); the first progress event waits for the run to exist.
    with runs_closed_on_interrupt():  # also one between asking for the run and holding it
        tracker = RemoteRun.open(process, settings, spec, parent_run_id=parent_run_id, tags=tags)
        session = TrainingSession(spec, tracker, on_progress, cancel, make_env, defer_plot)
        session.path = path
        return session.train(model, eval_env, spec.budget.total_timesteps, fresh=True)


def resume_run(
    run_id: str,
    *,
    on_progress: ProgressCallback | None = None,
    cancel: threading.Event | None = None,
    settings: Settings | None = None,
    make_env: EnvMaker | None = None,
    defer_plot: bool = False,
) -> RunResult:
    """Continue `run_id` from its last checkpoint, into the same MLflow run (`make_env`: the
    notebook env factory the run was started with, and `defer_plot`, as in `run_spec`)."""
    process = shared_tracking_process()
    settings = _prepare(settings)
    found = resumable(settings, run_id, recorded_folder(process, settings))
    spec, last, run_dir = found.spec, found.checkpoint, found.run_dir
    env = build_train_env(spec, normalize_stats=last.normalize, make_env=make_env)
    model = load_model(spec, str(last.model), env)  # on fresh envs, reset before the first step
    resumed = {tag.RESUMED_FROM_STEP: str(last.timesteps), **fast_paths_tag(model)}
    with runs_closed_on_interrupt():
        tracker = RemoteRun.reopen(process, settings, run_id, run_dir, resumed)
        session = TrainingSession(spec, tracker, on_progress, cancel, make_env, defer_plot)
        remaining = spec.budget.total_timesteps - last.timesteps
        return session.train(model, build_eval_env(spec, make_env), remaining, False)
