"""Parallel workers on one storage, resuming a study, and the trial of a killed worker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from ppo_platform.settings import Settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.loader import dump_spec
from ppo_platform.tuning import run_study
from ppo_platform.tuning.study import open_storage, trials_used

Factory = Callable[..., ExperimentSpec]
pytestmark = pytest.mark.slow


def load(storage_url: str, name: str) -> optuna.Study:
    return optuna.load_study(study_name=name, storage=open_storage(storage_url))


def test_two_workers_run_trials_in_two_processes(
    home: Settings, tiny_spec: Factory, tmp_path: Path
) -> None:
    storage_url = f"journal:{tmp_path / 'two.journal'}"
    spec = tiny_spec(**{"tune.n_trials": 4})
    run_study(
        spec, workers=2, storage=storage_url, study_name="two", out_dir=tmp_path / "out", live=False
    )
    trials = load(storage_url, "two").get_trials()
    assert len(trials) == 4  # the shared lock: two workers never overshoot n_trials
    assert all(t.state == TrialState.COMPLETE for t in trials)
    pids = {t.user_attrs["pid"] for t in trials}
    assert len(pids) == 2
    assert os.getpid() not in pids


def test_restarted_study_runs_only_the_missing_trials(
    home: Settings, tiny_spec: Factory, tmp_path: Path
) -> None:
    storage_url = f"journal:{tmp_path / 'resume.journal'}"

    def run_to(n_trials: int):
        spec = tiny_spec(**{"tune.n_trials": n_trials})
        return run_study(
            spec, storage=storage_url, study_name="r", out_dir=tmp_path / "out", live=False
        )

    first = run_to(2)
    before = [(t.number, t.params, t.value) for t in load(storage_url, "r").get_trials()]
    again = run_to(3)
    trials = load(storage_url, "r").get_trials()
    assert [t.number for t in trials] == [0, 1, 2]
    assert [(t.number, t.params, t.value) for t in trials[:2]] == before
    assert again.parent_run_id == first.parent_run_id  # the same MLflow parent run, reopened


def wait_for_running_trial(storage_url: str, name: str, timeout: float = 240) -> None:
    """Wait until a trial is RUNNING with its parameters sampled (a retry repeats those)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            running = load(storage_url, name).get_trials(states=(TrialState.RUNNING,))
            if any(t.params for t in running):
                return
        except KeyError:
            pass  # the study is not created yet
        time.sleep(0.5)
    raise AssertionError(f"no trial started within {timeout} s")


def test_trial_of_a_killed_worker_is_failed_and_retried(
    home: Settings, tiny_spec: Factory, tmp_path: Path
) -> None:
    storage_url = f"journal:{tmp_path / 'killed.journal'}"
    spec = tiny_spec(**{"tune.n_trials": 1})
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(dump_spec(spec))
    cli = Path(sys.executable).with_name("ppo-platform")
    worker = subprocess.Popen(
        [
            str(cli),
            "tune",
            str(spec_path),
            "--storage",
            storage_url,
            "--study",
            "killed",
            "--out",
            str(tmp_path / "out"),
        ],
        env={**os.environ},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_running_trial(storage_url, "killed")
    finally:
        worker.send_signal(signal.SIGKILL)  # no clean-up: the trial stays RUNNING
        worker.wait()
    time.sleep(1.5)
    run_study(
        spec,
        storage=storage_url,
        study_name="killed",
        out_dir=tmp_path / "out",
        live=False,
        heartbeat_interval=1,
        grace_period=1,
    )
    study = load(storage_url, "killed")
    dead, retry = study.get_trials()
    assert dead.state == TrialState.FAIL
    assert retry.state == TrialState.COMPLETE
    assert retry.system_attrs["failed_trial"] == dead.number
    assert retry.params == dead.params
    assert trials_used(study) == 1
