"""One tracking process shared by several processes (a sweep's warm workers): each connection
keeps its own runs, and a process that goes has its open runs closed KILLED, the others' kept."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from ppo_platform.settings import get_settings
from ppo_platform.tracking import tags
from ppo_platform.tracking.process import TrackingProcess
from ppo_platform.tracking.remote import RemoteRun
from ppo_platform.tracking.service import ABANDONED_REASON
from tests.ppo_platform_tests.training.test_runner import tiny_spec


def test_a_sharing_process_that_goes_has_its_run_closed_killed_and_the_others_kept(
    platform_home: Path,
) -> None:
    settings = get_settings()
    starter = TrackingProcess()
    with tempfile.TemporaryDirectory(prefix="ppo-test-") as folder:  # a short socket path
        starter.listen(f"{folder}/tracking.sock")
        own = RemoteRun.open(starter, settings, tiny_spec())
        sharer = TrackingProcess(f"{folder}/tracking.sock")
        assert sharer.child.pid == starter.child.pid  # the same process answers both
        theirs = RemoteRun.open(sharer, settings, tiny_spec())
        theirs.log_metrics({"train/approx_kl": 0.25}, step=64)
        theirs.flush()
        theirs_id = theirs.run_id  # both runs exist, with distinct ids
        assert theirs_id != own.run_id
        sharer.close()  # as a worker exits: the tracking process closes what it left open
        assert not sharer.alive

        own.log_metrics({"train/approx_kl": 0.5}, step=64)
        own.finish("FINISHED")  # the starting process's run is still open and writable
        starter.close()

    client = MlflowClient(settings.tracking_uri)
    closed = client.get_run(theirs_id)
    assert closed.info.status == "KILLED"
    assert closed.data.tags[tags.FAILURE] == ABANDONED_REASON
    assert closed.data.metrics["train/approx_kl"] == 0.25  # acknowledged rows are kept
    kept = client.get_run(own.run_id)
    assert kept.info.status == "FINISHED"
    assert kept.data.metrics["train/approx_kl"] == 0.5


def test_a_process_told_of_an_unreachable_shared_one_starts_its_own(
    platform_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ppo_platform.tracking import process

    monkeypatch.setattr(process, "_process", None)
    monkeypatch.setattr("ppo_platform.execution.child.CONNECT_TIMEOUT", 0.2)
    process.use_tracking_process("/nonexistent-folder/tracking.sock")
    own = process.shared_tracking_process()
    try:
        assert own.process is not None  # a child process of this one, not a connection
        assert own.alive
    finally:
        own.close()
