"""`run_study`: check the space, open the storage and study, run the workers, write outputs."""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ppo_platform.envs.ids import check_spec_env
from ppo_platform.execution.local import worker_count
from ppo_platform.settings import Settings, get_settings, store_kind
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.names import check_name, path_inside, refuse_overwrite
from ppo_platform.spec.workloads import AnySpec
from ppo_platform.tuning.board import StudyBoard
from ppo_platform.tuning.events import StudyEvent, StudyListener, StudyStarted
from ppo_platform.tuning.outputs import OUTPUT_FILES, StudyOutputs, check_writable, write_outputs
from ppo_platform.tuning.runs import open_study_run, study_label
from ppo_platform.tuning.space import check_space
from ppo_platform.tuning.study import (
    GRACE_SECONDS,
    HEARTBEAT_SECONDS,
    PARENT_RUN_ATTR,
    default_storage_url,
    open_storage,
    prepare_study,
    redact,
    study_budget,
)
from ppo_platform.tuning.workers import WorkerConfig, quiet_logs, run_workers

if TYPE_CHECKING:
    import optuna

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TuneResult:
    study_name: str
    storage: str  # redacted URL
    parent_run_id: str
    outputs: StudyOutputs


def default_out_dir(settings: Settings, study_name: str) -> Path:
    """outputs/tune-<study>: the study name is checked like a spec name and kept inside."""
    check_name(study_name, "--study")
    return path_inside(settings.outputs_dir, [study_label(study_name)], "--study")


def output_folder(settings: Settings, study_name: str, out_dir: Path | None, force: bool) -> Path:
    """Where the outputs go. The default folder is the study's own and is refreshed on every
    run; a folder given with --out keeps existing files unless `force`. Either must be
    writable: that is checked here, before any trial runs."""
    if out_dir is None:
        folder = default_out_dir(settings, study_name)
    else:
        refuse_overwrite([out_dir / name for name in OUTPUT_FILES], "--out", force)
        folder = out_dir
    check_writable(folder)
    return folder


def run_study(
    spec: AnySpec,
    *,
    workers: int = 1,
    storage: str | None = None,
    study_name: str | None = None,
    out_dir: Path | None = None,
    force: bool = True,
    settings: Settings | None = None,
    progress: TextIO | None = None,
    live: bool | None = None,
    heartbeat_interval: int = HEARTBEAT_SECONDS,
    grace_period: int = GRACE_SECONDS,
    on_event: StudyListener | None = None,
    from_outside: bool = False,
) -> TuneResult:
    """Run (or continue) the spec's study to its n_trials and write its outputs. `on_event`
    receives the study's progress as data (`tuning/events.py`): its parent run, each finished
    trial with its value and run id, the counts. `from_outside` (a service job): the space and
    every trial are checked under the service's rules, as the submitted spec was, and the
    summary names the storage by kind. Raises SpecError for a bad spec or space, ConflictError
    for existing files in `out_dir` when not `force`, TuningError if no trial completed."""
    check_space(spec, from_outside=from_outside)
    assert spec.tune is not None
    if isinstance(spec, ExperimentSpec):  # a ppo_lm spec's inputs were checked when loaded
        check_spec_env(spec)  # before any storage or MLflow run
    quiet_logs()
    settings = settings or get_settings()
    study_name = spec.name if study_name is None else study_name
    folder = output_folder(settings, study_name, out_dir, force)
    storage_url = storage or default_storage_url(settings)
    label = store_kind(storage_url) if from_outside else redact(storage_url)
    study = prepare_study(
        spec, open_storage(storage_url, heartbeat_interval, grace_period), study_name
    )
    with open_study_run(
        settings, spec, study_name, label, study.user_attrs.get(PARENT_RUN_ATTR)
    ) as tracker:  # closed KILLED on an interrupt, FAILED on an error
        parent_run_id = tracker.run_id
        study.set_user_attr(PARENT_RUN_ATTR, parent_run_id)
        config = _worker_config(
            spec,
            storage_url,
            study_name,
            parent_run_id,
            settings,
            heartbeat_interval,
            grace_period,
            from_outside=from_outside,
        )
        if on_event is not None:
            on_event(StudyStarted(study_name, parent_run_id, config.n_trials))
        board = StudyBoard(study, config.n_trials, stream=progress, live=live, on_event=on_event)
        _run_with_board(config, workers, board)
        verified = _verify(study, config, workers, progress, on_event)
        outputs = write_outputs(
            spec, study, folder, label, tracker, verified, from_outside=from_outside
        )
    return TuneResult(study_name, label, parent_run_id, outputs)


def _verify(
    study: optuna.Study,
    worker: WorkerConfig,
    workers: int,
    progress: TextIO | None,
    on_event: StudyListener | None,
) -> list[dict[str, Any]] | None:
    """With `tune.verify`: the top trials re-run on the held-out seeds (verify.py), each
    result an event; trials verified by an earlier run of the study are not re-run."""
    spec = worker.spec
    assert spec.tune is not None
    verify = spec.tune.verify
    if verify is None:
        return None
    from ppo_platform.tuning.verify import VerifyConfig
    from ppo_platform.tuning.verify_study import verify_study

    stream = progress or sys.stderr

    def tell(event: StudyEvent) -> None:
        print(event.describe(), file=stream, flush=True)
        if on_event is not None:
            on_event(event)

    assert isinstance(spec, ExperimentSpec)  # check_space refuses verify for ppo_lm
    config = VerifyConfig(
        spec, worker.study_name, worker.parent_run_id, worker.settings, worker.from_outside
    )
    n_workers, _ = worker_count(workers, verify.top_trials)
    return verify_study(config, study, n_workers, tell)


def _worker_config(
    spec: AnySpec,
    storage_url: str,
    study_name: str,
    parent_run_id: str,
    settings: Settings,
    heartbeat_interval: int,
    grace_period: int,
    *,
    from_outside: bool,
) -> WorkerConfig:
    assert spec.tune is not None
    timeout = spec.tune.timeout
    return WorkerConfig(
        spec=spec,
        storage_url=storage_url,
        study_name=study_name,
        parent_run_id=parent_run_id,
        n_trials=study_budget(spec),
        deadline=time.time() + timeout if timeout else None,
        heartbeat_interval=heartbeat_interval,
        grace_period=grace_period,
        settings=settings,
        from_outside=from_outside,
    )


def _run_with_board(config: WorkerConfig, workers: int, board: StudyBoard) -> None:
    """Run the workers while the board shows progress."""
    thread, stop = board.start()
    try:
        n_workers, crowded = worker_count(workers, config.n_trials)
        if crowded:
            logger.warning("warning: %s", crowded)
        run_workers(config, n_workers)
    finally:
        stop.set()
        thread.join()
