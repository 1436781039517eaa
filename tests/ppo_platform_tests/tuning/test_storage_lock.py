"""The lock a study's workers share through its storage (Ray workers share nothing else): one
holder at a time, and a holder that dies (its connection or file closed) blocks nobody."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from postgres_server import create_database

from ppo_platform.tuning.storage_lock import FileLock, PostgresLock, storage_lock


def test_a_journal_storage_is_locked_through_a_file_beside_it(tmp_path: Path) -> None:
    url = f"journal:{tmp_path / 'studies.journal'}"
    first, second = storage_lock(url, "s"), storage_lock(url, "s")
    assert isinstance(first, FileLock) and isinstance(second, FileLock)
    assert first.path.parent == tmp_path
    assert first.acquire(timeout=1)
    assert not second.acquire(timeout=0.2)  # held by the other worker
    first.release()
    assert second.acquire(timeout=1)
    other_study = storage_lock(url, "another")
    assert other_study is not None and other_study.acquire(timeout=0.2)  # one lock per study
    second.close()
    other_study.close()


def test_a_postgresql_storage_is_locked_by_an_advisory_lock(postgres_server: str) -> None:
    url = create_database(postgres_server, f"optuna_{uuid.uuid4().hex[:12]}")
    first, second = storage_lock(url, "study"), storage_lock(url, "study")
    assert isinstance(first, PostgresLock) and isinstance(second, PostgresLock)
    try:
        assert first.acquire(timeout=5)
        assert not second.acquire(timeout=0.3)
        first.release()
        assert second.acquire(timeout=5)
        first.close()
        first = storage_lock(url, "study")
        assert isinstance(first, PostgresLock)
        second.close()  # its holder's connection ends (a worker that died): the lock is free
        assert first.acquire(timeout=5)
    finally:
        first.close()
        second.close()


def test_other_databases_get_no_lock() -> None:
    assert storage_lock("mysql://u@h/db", "s") is None


@pytest.mark.parametrize("name", ["a", "b/c", "x" * 200])
def test_lock_keys_are_stable_signed_64_bit(name: str) -> None:
    from ppo_platform.tuning.storage_lock import lock_key

    assert lock_key(name) == lock_key(name) and -(2**63) <= lock_key(name) < 2**63
