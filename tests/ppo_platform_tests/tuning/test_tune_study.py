"""Storage and study: default journal file, resume checks, stale trials, budget, samplers."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import optuna
import pytest
from optuna.storages import fail_stale_trials
from optuna.trial import TrialState

from ppo_platform.errors import BadInputError, ConflictError, SpecError
from ppo_platform.settings import Settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.tuning.study import (
    HEARTBEAT_ATTR,
    default_storage_url,
    load_study,
    make_pruner,
    make_sampler,
    open_storage,
    prepare_study,
    redact,
    study_budget,
    trials_used,
)

Factory = Callable[..., ExperimentSpec]
# These tests ask for trials by hand (no Study.optimize), which Optuna warns about.
pytestmark = pytest.mark.filterwarnings("ignore:Heartbeat of storage:UserWarning")


def journal(tmp_path: Path, **heartbeat: int) -> optuna.storages.BaseStorage:
    return open_storage(f"journal:{tmp_path / 'studies.journal'}", **heartbeat)


def test_default_storage_is_a_journal_file_under_the_platform_home(home: Settings) -> None:
    url = default_storage_url(home)
    assert url.startswith("journal:")
    assert Path(url.removeprefix("journal:")).is_relative_to(home.home.resolve())


def test_storage_that_is_neither_journal_nor_a_url_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BadInputError) as error:
        open_storage(str(tmp_path / "studies.db"))
    assert error.value.issues[0].path == "--storage"


def test_sqlite_url_opens_an_rdb_storage_with_heartbeat(tmp_path: Path) -> None:
    storage = open_storage(
        f"sqlite:///{tmp_path / 'optuna.db'}", heartbeat_interval=5, grace_period=20
    )
    assert isinstance(storage, optuna.storages.RDBStorage)
    assert storage.get_heartbeat_interval() == 5


def test_password_is_redacted_from_the_storage_label() -> None:
    label = redact("postgresql://tuner:s3cret@db.example:5432/optuna")
    assert label == "postgresql://tuner:***@db.example:5432/optuna"


def test_running_trial_past_its_grace_period_is_failed_and_retried(
    tmp_path: Path, tiny_spec: Factory
) -> None:
    storage = journal(tmp_path, heartbeat_interval=1, grace_period=1)
    study = load_study(tiny_spec(), storage, "stale")
    orphan = study.ask()  # a worker that asked for a trial, then died: no heartbeat follows
    orphan.suggest_float("update.learning_rate.start", 1e-3, 3e-3)
    time.sleep(1.5)
    fail_stale_trials(study)
    trials = study.get_trials()
    assert trials[0].state == TrialState.FAIL
    assert trials[1].state == TrialState.WAITING
    assert trials[1].system_attrs["failed_trial"] == orphan.number
    assert trials[1].params == trials[0].params


def test_trial_that_beats_is_not_stale(tmp_path: Path, tiny_spec: Factory) -> None:
    storage = journal(tmp_path, heartbeat_interval=1, grace_period=1)
    study = load_study(tiny_spec(), storage, "alive")
    trial = study.ask()
    time.sleep(1.5)
    storage.record_heartbeat(trial._trial_id)
    assert study.get_trials()[0].system_attrs[HEARTBEAT_ATTR] > time.time() - 1
    fail_stale_trials(study)
    assert [t.state for t in study.get_trials()] == [TrialState.RUNNING]


def test_budget_ignores_retried_and_interrupted_failures(
    tmp_path: Path, tiny_spec: Factory
) -> None:
    study = load_study(tiny_spec(), journal(tmp_path, heartbeat_interval=1, grace_period=1), "b")
    study.tell(study.ask(), 1.0)  # counts
    interrupted = study.ask()
    interrupted.set_user_attr("interrupted", True)
    study.tell(interrupted, state=TrialState.FAIL)  # Ctrl-C: does not count
    study.ask()  # stale, then retried: does not count
    time.sleep(1.5)
    fail_stale_trials(study)  # ...its WAITING retry does not count yet
    assert trials_used(study) == 1


def test_resuming_a_study_with_another_space_is_refused(tmp_path: Path, tiny_spec: Factory) -> None:
    storage = journal(tmp_path)
    prepare_study(tiny_spec(), storage, "resume")
    other = tiny_spec(**{"tune.space": {"update.epochs": {"type": "int", "low": 1, "high": 4}}})
    with pytest.raises(ConflictError) as error:
        prepare_study(other, storage, "resume")
    assert error.value.issues[0].path == "--study"


def test_resuming_with_a_larger_n_trials_is_the_same_study(
    tmp_path: Path, tiny_spec: Factory
) -> None:
    storage = journal(tmp_path)
    first = prepare_study(tiny_spec(), storage, "grow")
    again = prepare_study(tiny_spec(**{"tune.n_trials": 10}), storage, "grow")
    assert again._study_id == first._study_id


def test_sampler_is_reproducible_and_each_worker_gets_its_own_seed(tiny_spec: Factory) -> None:
    spec = tiny_spec(**{"tune.sampler.type": "tpe", "tune.sampler.n_startup_trials": 3})

    def first_values(worker_index: int) -> list[float]:
        study = optuna.create_study(sampler=make_sampler(spec, worker_index))
        return [study.ask().suggest_float("x", 0.0, 1.0) for _ in range(3)]

    assert first_values(0) == first_values(0)
    assert first_values(0) != first_values(1)


def test_hyperband_resource_is_evaluations_across_seeds(tiny_spec: Factory) -> None:
    spec = tiny_spec(**{"tune.pruner.type": "hyperband", "tune.seeds_per_trial": 2})
    pruner = make_pruner(spec)
    assert isinstance(pruner, optuna.pruners.HyperbandPruner)
    assert pruner._max_resource == 2 * (1000 // 250)


def test_grid_budget_is_capped_at_the_grid_size(tiny_spec: Factory) -> None:
    spec = tiny_spec(
        **{
            "tune.sampler.type": "grid",
            "tune.n_trials": 50,
            "tune.space": {"update.epochs": {"type": "int", "low": 1, "high": 3}},
        }
    )
    assert study_budget(spec) == 3


def test_start_points_are_the_first_trials_of_a_new_study_only(
    tmp_path: Path, tiny_spec: Factory
) -> None:
    storage = journal(tmp_path)
    spec = tiny_spec(
        **{
            "tune.space": {
                "update.learning_rate.start": {"type": "float", "low": 1e-3, "high": 3e-3},
                "policy.net_arch": {"type": "categorical", "choices": [[8], [16, 16]]},
            },
            "tune.start_points": [{"update.learning_rate.start": 2e-3, "policy.net_arch": [8]}],
        }
    )
    study = prepare_study(spec, storage, "primed")
    (waiting,) = study.get_trials(states=(TrialState.WAITING,))
    fixed = waiting.system_attrs["fixed_params"]
    assert fixed == {"update.learning_rate.start": 2e-3, "policy.net_arch": "[8]"}
    prepare_study(spec, storage, "primed")  # resumed: not queued again
    assert len(study.get_trials()) == 1


def test_a_start_point_outside_the_space_is_refused_naming_it(tiny_spec: Factory) -> None:
    with pytest.raises(SpecError) as raised:
        tiny_spec(**{"tune.start_points": [{"update.learning_rate.start": 9e-3}]})
    assert "tune.start_points[0].update.learning_rate.start" in raised.value.render()
