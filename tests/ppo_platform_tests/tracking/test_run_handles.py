"""One tracking client for every kind of run: a study, its trial and a training run open at once
through one tracking process; each handle closes its run exactly once, with the status the way
out implies; children are found and runs left RUNNING are closed without MLflow in the caller."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from ppo_platform.errors import Terminated
from ppo_platform.settings import get_settings
from ppo_platform.tracking import tags
from ppo_platform.tracking.remote import RemoteRun, runs_closed_on_interrupt
from ppo_platform.tracking.requests import find_runs, terminate_run


def _run(run_id: str):
    return MlflowClient(get_settings().tracking_uri).get_run(run_id)


def test_runs_of_every_kind_nest_and_close_with_the_status_the_exit_implies(
    platform_home: Path,
) -> None:
    with RemoteRun.open_kind("study", {tags.RUN_NAME: "s"}, experiment="handles") as study:
        trial = RemoteRun.open_kind(
            "trial", {tags.RUN_NAME: "t", tags.PARENT_RUN_ID: study.run_id}, params={"a": [1, 2]}
        )
        with pytest.raises(ValueError), trial:
            trial.log_metrics({"tune/seed_value": 3.5}, 0)
            raise ValueError("the seed diverged")
        with (
            pytest.raises(Terminated),
            RemoteRun.open_kind(
                "training", {tags.PARENT_RUN_ID: trial.run_id}, experiment="handles"
            ) as seed,
        ):
            raise Terminated("SIGTERM")
        trial.finish("FINISHED")  # already closed: a second close changes nothing
    assert _run(study.run_id).info.status == "FINISHED"
    stored = _run(trial.run_id)
    assert stored.info.status == "FAILED"
    assert stored.data.tags[tags.FAILURE] == "ValueError: the seed diverged"
    assert stored.data.params == {"a": "[1, 2]"}
    assert stored.data.metrics == {"tune/seed_value": 3.5}
    assert stored.info.experiment_id == _run(study.run_id).info.experiment_id  # its parent's
    killed = _run(seed.run_id)
    assert (killed.info.status, killed.data.tags[tags.FAILURE]) == (
        "KILLED",
        "terminated (SIGTERM)",
    )
    assert all(tags.PROCESS in _run(r).data.tags for r in (study.run_id, trial.run_id))


def test_children_are_found_by_tag_and_only_running_ones_are_closed(platform_home: Path) -> None:
    with RemoteRun.open_kind("sweep", {tags.RUN_NAME: "p"}, experiment="found") as parent:
        keys = ("k1", "k2")
        children = [
            RemoteRun.open_kind(
                f"member-{key}",
                {tags.PARENT_RUN_ID: parent.run_id, tags.SWEEP_KEY: key},
                experiment="found",
            )
            for key in keys
        ]
        children[0].finish("FINISHED")
        found = find_runs("found", {tags.SWEEP_KEY: "k2"}, parent=parent.run_id)
        assert [run["run_id"] for run in found] == [children[1].run_id]
        assert found[0]["status"] == "RUNNING"
        assert not terminate_run(children[0].run_id, "KILLED", only_running=True)
        assert terminate_run(
            children[1].run_id, "KILLED", {tags.FAILURE: "gone"}, only_running=True
        )
        children[1].closed = True  # closed from outside its handle, as a dead worker's run is
    assert _run(children[0].run_id).info.status == "FINISHED"
    assert _run(children[1].run_id).info.status == "KILLED"
    assert find_runs("no-such-experiment", {}) == []
    with pytest.raises(Exception, match="cannot search for the tag value"):
        find_runs("found", {tags.SWEEP_KEY: "x' or '1'='1"})


def test_mlflow_system_tags_are_spelled_as_mlflow_spells_them() -> None:
    from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID, MLFLOW_RUN_NAME

    assert (tags.RUN_NAME, tags.PARENT_RUN_ID) == (MLFLOW_RUN_NAME, MLFLOW_PARENT_RUN_ID)


def test_an_interrupt_before_a_run_is_held_still_closes_it_killed(platform_home: Path) -> None:
    """A cancel can land between asking for a run and holding its handle (a Ray worker lives
    on after it, and so does its tracking process): the run asked for inside the block is
    closed KILLED; a run opened before the block, and one already closed, are left alone."""
    outer = RemoteRun.open_kind("study", {tags.RUN_NAME: "outer"}, experiment="held")
    asked: list[RemoteRun] = []
    with pytest.raises(KeyboardInterrupt), runs_closed_on_interrupt():
        done = RemoteRun.open_kind("trial", {tags.PARENT_RUN_ID: outer.run_id})
        done.finish("FINISHED")
        asked.append(RemoteRun.open_kind("trial", {tags.PARENT_RUN_ID: outer.run_id}))
        raise KeyboardInterrupt  # before the handle's `with` (nobody would close it)
    left = _run(asked[0].run_id)
    assert (left.info.status, left.data.tags[tags.FAILURE]) == ("KILLED", "interrupted")
    assert _run(done.run_id).info.status == "FINISHED"
    assert _run(outer.run_id).info.status == "RUNNING"
    outer.finish("FINISHED")
    assert _run(outer.run_id).info.status == "FINISHED"
