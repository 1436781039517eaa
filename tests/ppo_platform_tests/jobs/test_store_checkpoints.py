"""SQLite's WAL checkpoints kept off the submissions' path: an intake worker's store leaves
them to its idle moments (a checkpoint in a commit took 6 ms and held up every submission
queued behind it). Read from the WAL index itself (the `-shm` file): frames written, frames
copied back into the database."""

from __future__ import annotations

import struct
import time
from pathlib import Path

from ppo_platform.jobs import JobStore
from ppo_platform.jobs.intake import prepare_submission
from ppo_platform.jobs.intake_pool import IDLE_CHECKPOINT_SUBMISSIONS, IntakePool, submit_spec

GRID = (
    "name: g\nenv: {id: ppo_platform/GridWorld-v0, n_envs: 1}\n"
    "rollout: {n_steps: 64}\nbudget: {total_timesteps: 512}\n"
)
SUBMISSIONS = 300  # about 3,000 WAL frames: past SQLite's automatic checkpoint at 1,000


def wal_frames(database: Path) -> tuple[int, int]:
    """(frames in the WAL, frames of it already copied into the database): `mxFrame` of the
    WAL-index header and `nBackfill` of its checkpoint info, in native byte order."""
    shm = database.with_name(database.name + "-shm").read_bytes()[:136]
    return struct.unpack_from("=I", shm, 16)[0], struct.unpack_from("=I", shm, 96)[0]


def submit_many(store: JobStore) -> None:
    job = prepare_submission(GRID, 10**9)
    for i in range(SUBMISSIONS):
        store.submit(f"key{i % 3}", job, None, 10**6)


def test_an_intake_store_leaves_checkpoints_to_its_idle_moments(tmp_path: Path) -> None:
    database = tmp_path / "jobs.db"
    url = f"sqlite:///{database}"
    JobStore(url, tmp_path).close()  # migrated
    store = JobStore(url, tmp_path, migrate_schema=False, deferred_checkpoints=True)
    try:
        submit_many(store)
        written, copied = wal_frames(database)
        assert written > 2000 and copied == 0  # no commit checkpointed
        store.checkpoint()
        assert wal_frames(database) == (written, written)
    finally:
        store.close()


def test_a_plain_store_checkpoints_in_its_commits(tmp_path: Path) -> None:
    database = tmp_path / "jobs.db"
    store = JobStore(f"sqlite:///{database}", tmp_path)
    try:
        submit_many(store)
        written, _ = wal_frames(database)
        assert written < 1100  # commits checkpointed at 1,000 frames and the WAL started over
    finally:
        store.close()


def test_an_intake_worker_checkpoints_once_it_has_no_call_waiting(tmp_path: Path) -> None:
    """After IDLE_CHECKPOINT_SUBMISSIONS (about SQLite's own 1,000 pages), not after each one."""
    database = tmp_path / "jobs.db"
    url = f"sqlite:///{database}"
    JobStore(url, tmp_path).close()
    pool = IntakePool(1)
    try:
        few = IDLE_CHECKPOINT_SUBMISSIONS - 1
        for i in range(few):  # one at a time: idle after each
            pool.submit(submit_spec, url, f"key{i % 3}", GRID, None, 10**9, 10**6).result(60)
        time.sleep(0.5)
        written, copied = wal_frames(database)
        assert written > 500 and copied == 0  # not checkpointed yet
        pool.submit(submit_spec, url, "key", GRID, None, 10**9, 10**6).result(60)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            written, copied = wal_frames(database)
            if written and copied == written:
                break
            time.sleep(0.1)
        assert written > 0 and copied == written  # idle: its submissions checkpointed
    finally:
        pool.close()


def test_intake_threads_keep_sqlites_own_checkpoints(tmp_path: Path) -> None:
    """With `PPO_PLATFORM_INTAKE_WORKERS=0` submissions are queued by threads of the API
    process, which never run the idle checkpoint: their store checkpoints in its commits."""
    from ppo_platform.jobs import intake_pool

    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    JobStore(url, tmp_path).close()
    pool = IntakePool(0)
    try:
        pool.submit(submit_spec, url, "key", GRID, None, 10**9, 10**6).result(timeout=60)
        with intake_pool._stores[url].engine.connect() as connection:
            pages = connection.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar()
        assert pages == 1000  # SQLite's own
    finally:
        pool.close()
