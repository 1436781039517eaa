"""Every wait on the tracking process is bounded: a process that does not
answer (stopped here with SIGSTOP) fails the run with what was pending, never hangs it; a run
failed while its tracking process lives is closed FAILED, not KILLED at exit."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from ppo_platform.errors import TrackingError
from ppo_platform.settings import get_settings
from ppo_platform.tracking import tags
from ppo_platform.tracking.remote import RemoteRun, TrackingProcess
from tests.ppo_platform_tests.training.test_runner import tiny_spec


def test_a_tracking_process_that_does_not_answer_fails_the_wait_naming_what_was_pending() -> None:
    process = TrackingProcess()
    process.wait(process.request("reap", awaited=True, uri=get_settings().tracking_uri))
    os.kill(process.process.pid, signal.SIGSTOP)
    process.request("rows", rows=[["a", 1.0, 0, 1], ["b", 2.0, 0, 1]])
    seq = process.request("tags", awaited=True, tags={"x": "y"})
    message = rf"did not answer request tags \(#{seq}\) within 1 s; pending: 1 rows, 1 tags"
    with pytest.raises(TrackingError, match=message + r" \(2 metric rows unacknowledged\)"):
        process.wait(seq, timeout=1.0)
    assert process.process.wait(timeout=10) == -signal.SIGKILL  # it writes nothing afterwards
    with pytest.raises(TrackingError, match="did not answer request tags"):
        process.check()  # every later call says why


def test_a_run_failed_while_its_tracking_process_lives_is_closed_failed_not_killed(
    platform_home: Path,
) -> None:
    process = TrackingProcess()
    run = RemoteRun.open(process, get_settings(), tiny_spec())
    run_id = run.run_id
    run.log_artifact(platform_home / "no-such-file", "model")
    with pytest.raises(TrackingError, match="could not artifact"):
        process.wait(process.request("tags", awaited=True, run=run.handle, tags={}))
        run.flush()
    run.fail("the artifact was missing")
    process.close()  # at exit a run left open would be closed KILLED
    stored = MlflowClient(get_settings().tracking_uri).get_run(run_id)
    assert stored.info.status == "FAILED"
    assert stored.data.tags[tags.FAILURE] == "the artifact was missing"
    assert stored.data.tags[tags.OUTCOME] == "failed"


def test_a_run_whose_setup_fails_after_it_was_opened_is_closed_failed_with_the_reason(
    platform_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ppo_platform.tracking.remote import shared_tracking_process
    from ppo_platform.training.runner import run_spec

    shared_tracking_process()  # started before the interpreter path breaks
    # The asynchronous evaluation process cannot start: its interpreter is missing.
    monkeypatch.setattr("sys.executable", str(platform_home / "no-such-python"))
    with pytest.raises(FileNotFoundError):
        run_spec(tiny_spec(evaluation__async=True))
    client = MlflowClient(get_settings().tracking_uri)
    [run] = client.search_runs([e.experiment_id for e in client.search_experiments()])
    assert run.info.status == "FAILED"
    assert run.data.tags[tags.FAILURE].startswith("FileNotFoundError while starting")


def test_a_run_whose_tracking_process_died_is_closed_failed_by_a_fresh_one(
    platform_home: Path,
) -> None:
    """No MLflow in the caller even then: a short-lived tracking process closes the run, by its
    id, or (the id never came back) every RUNNING run this process owns."""
    settings = get_settings()
    known, unanswered = TrackingProcess(), TrackingProcess()
    run = RemoteRun.open(known, settings, tiny_spec())
    run_id = run.run_id
    orphan = RemoteRun.open(unanswered, settings, tiny_spec(name="orphan"))
    orphan_id = orphan.run_id
    for process in (known, unanswered):  # killed: nothing closes the runs at its exit
        process.process.kill()
        process.process.wait(timeout=10)
    run.fail("its tracking process was killed")
    # A handle whose open was never answered: its run is found by this process's owner tag.
    RemoteRun(unanswered, 10**6, settings).fail("killed before the answer")
    client = MlflowClient(settings.tracking_uri)
    stored, lost = client.get_run(run_id), client.get_run(orphan_id)
    assert (stored.info.status, lost.info.status) == ("FAILED", "FAILED")
    assert stored.data.tags[tags.FAILURE] == "its tracking process was killed"
    assert lost.data.tags[tags.FAILURE] == "killed before the answer"


def test_a_run_whose_open_failed_says_so_at_once_every_time_it_is_asked(
    platform_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MLflow refuses the tracking URI (a file store, which MLflow 3 no longer writes): the
    open's error answers every later ask at once. Before, the second ask (closing the run
    FAILED after the first error) waited for an answer already taken, REPLY_TIMEOUT (60 s),
    then killed the tracking process: `run` took 68 s to print its error."""
    from ppo_platform.tracking import process as tracking_process

    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    monkeypatch.setattr(tracking_process, "REPLY_TIMEOUT", 5.0)
    settings = get_settings().model_copy(
        update={"mlflow_tracking_uri": (platform_home / "mlruns").as_uri()}
    )
    process = TrackingProcess()
    try:
        run = RemoteRun.open(process, settings, tiny_spec())
        for _ in range(2):
            with pytest.raises(TrackingError, match="could not open: MlflowException"):
                _ = run.run_id
        assert process.alive  # not killed for an answer it had given
    finally:
        process.close()
