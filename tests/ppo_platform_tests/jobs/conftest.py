"""A fresh job store per test, and tiny specs that train in a second or two."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ppo_platform.jobs import JobStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[JobStore]:
    job_store = JobStore(f"sqlite:///{tmp_path / 'jobs.db'}", tmp_path)
    yield job_store
    job_store.close()
