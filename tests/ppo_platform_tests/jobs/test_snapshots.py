"""Status snapshots: served from memory until a commit changes the row, never staler."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ppo_platform.errors import NotFoundError
from ppo_platform.jobs import Experiment, JobStore, prepare_submission
from ppo_platform.jobs.snapshots import StatusSnapshots

TINY_RUN = "name: tiny\nenv: {id: ppo_platform/GridWorld-v0, n_envs: 1}\n"


def _submit(store: JobStore, owner: str = "alice") -> str:
    return store.submit(owner, prepare_submission(TINY_RUN, 10**6), None, 100)[0].id


class Renders:
    """A render function that counts its calls (a hit renders nothing)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, row: Experiment) -> tuple[str, int]:
        self.calls += 1
        return row.status, row.attempts


@pytest.fixture
def snapshots(store: JobStore) -> Iterator[StatusSnapshots[tuple[str, int]]]:
    cache = StatusSnapshots(store, Renders())
    yield cache
    cache.close()


def test_a_held_status_is_served_from_memory_until_its_row_changes(
    store: JobStore, snapshots: StatusSnapshots[tuple[str, int]]
) -> None:
    job_id = _submit(store)
    assert snapshots.lookup(job_id, "alice") is None  # never read yet
    assert snapshots.load(job_id, "alice") == ("queued", 0)
    assert snapshots.lookup(job_id, "alice") == ("queued", 0)
    _submit(store)  # a commit that does not touch this row: still a hit
    assert snapshots.lookup(job_id, "alice") == ("queued", 0)
    assert snapshots.render.calls == 1  # type: ignore[attr-defined]
    assert store.mark_running(job_id)  # committed by this process's pool
    assert snapshots.lookup(job_id, "alice") is None
    assert snapshots.load(job_id, "alice") == ("running", 1)


def test_a_commit_from_another_process_is_visible_at_once(
    store: JobStore, snapshots: StatusSnapshots[tuple[str, int]], tmp_path: Path
) -> None:
    job_id = _submit(store)
    assert snapshots.load(job_id, "alice") == ("queued", 0)
    assert snapshots.lookup(job_id, "alice") == ("queued", 0)
    script = (
        "import sys; from pathlib import Path; from ppo_platform.jobs import JobStore; "
        "s = JobStore(sys.argv[1], Path(sys.argv[2]), migrate_schema=False); "
        "assert s.mark_running(sys.argv[3])"
    )
    subprocess.run(
        [sys.executable, "-c", script, store.url, str(tmp_path), job_id], check=True, timeout=60
    )
    assert snapshots.lookup(job_id, "alice") is None
    assert snapshots.load(job_id, "alice") == ("running", 1)


def test_another_owner_never_gets_a_held_status(
    store: JobStore, snapshots: StatusSnapshots[tuple[str, int]]
) -> None:
    job_id = _submit(store)
    snapshots.load(job_id, "alice")
    assert snapshots.lookup(job_id, "bob") is None
    with pytest.raises(NotFoundError):
        snapshots.load(job_id, "bob")


def test_every_kind_of_update_moves_the_row_version(store: JobStore) -> None:
    job_id = _submit(store)
    versions = [store.get(job_id).row_version]
    store.append_event(job_id, "progress", {"timesteps": 1}, progress={"timesteps": 1})
    versions.append(store.get(job_id).row_version)
    store.update(job_id, pid=123)
    versions.append(store.get(job_id).row_version)
    row = store.cancel(job_id)  # an ORM flush
    versions.append(store.get(job_id).row_version)
    assert versions == sorted(set(versions)) and row.row_version == versions[-1]
