"""The job store on PostgreSQL: migrations, submit/list/cancel/events, keys, and one tiny job
through the dispatcher, against a throwaway PostgreSQL server (postgresql+psycopg://).

Skipped (with the reason) when the PostgreSQL server binaries or psycopg are missing.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from postgres_server import create_database
from sqlalchemy import inspect

from ppo_platform.errors import ConflictError, NotFoundError
from ppo_platform.jobs import Dispatcher, JobStore, ServiceSettings, prepare_submission
from ppo_platform.jobs.keys import authenticate, create_key, revoke_key
from ppo_platform.jobs.models import TERMINAL

pytestmark = pytest.mark.slow
TINY_RUN = """name: %s
env: {id: ppo_platform/GridWorld-v0, n_envs: 1}
rollout: {n_steps: 64}
update: {epochs: 2, minibatch_size: 64}
budget: {total_timesteps: %d}
evaluation: {every_timesteps: 256, episodes: 2}
checkpoints: {every_timesteps: 128}
"""


@pytest.fixture
def pg_store(postgres_server: str, tmp_path: Path) -> Iterator[JobStore]:
    url = create_database(postgres_server, f"jobs_{uuid.uuid4().hex[:12]}")
    assert url.startswith("postgresql+psycopg://")
    store = JobStore(url, tmp_path)
    yield store
    store.close()


def _submit(store: JobStore, name: str, steps: int = 512, key: str | None = None) -> str:
    job, _ = store.submit("alice", prepare_submission(TINY_RUN % (name, steps), 10**6), key, 100)
    return job.id


def test_migrations_submit_list_cancel_events_and_keys_on_postgresql(
    pg_store: JobStore, tmp_path: Path
) -> None:
    assert pg_store.engine.dialect.name == "postgresql"
    assert {"experiments", "events", "api_keys", "alembic_version"} <= set(
        inspect(pg_store.engine).get_table_names()
    )
    JobStore(pg_store.url, tmp_path).close()  # the second start finds the schema at head
    first = _submit(pg_store, "first", key="retry-1")
    assert _submit(pg_store, "first", key="retry-1") == first  # idempotent
    second = _submit(pg_store, "second")
    job = pg_store.get(first, "alice")
    assert (job.status, job.kind, job.total_timesteps) == ("queued", "run", 512)
    assert job.spec["env"]["id"] == "ppo_platform/GridWorld-v0"
    with pytest.raises(NotFoundError):
        pg_store.get(first, "bob")
    page, cursor = pg_store.page("alice", limit=1)
    assert [j.id for j in page] == [second] and cursor is not None
    assert [j.id for j in pg_store.page("alice", cursor=cursor)[0]] == [first]
    assert pg_store.cancel(second, "alice").status == "cancelled"
    third = _submit(pg_store, "third")
    assert pg_store.mark_running(third) and pg_store.finish(third, "succeeded", result={"x": 1})
    with pytest.raises(ConflictError):
        pg_store.cancel(third, "alice")
    assert pg_store.get(third).result == {"x": 1}
    alert = pg_store.append_event(first, "alert", {"message": "kl"})
    events = pg_store.events_after(first)
    assert [(e.kind, e.data) for e in events] == [
        ("status", {"status": "queued"}),
        ("alert", {"message": "kl"}),
    ]
    assert events[-1].id == alert and pg_store.events_after(first, after=alert) == []
    assert pg_store.get(first).alerts == 1
    key = create_key(pg_store, "carol")
    assert authenticate(pg_store, key, {}) == "carol"
    revoke_key(pg_store, "carol")
    assert authenticate(pg_store, key, {}) is None


def test_a_tiny_job_runs_through_the_dispatcher_on_postgresql(
    pg_store: JobStore, platform_home: Path
) -> None:
    service = ServiceSettings(jobs_concurrency=1, jobs_database_url=pg_store.url)
    dispatcher = Dispatcher(pg_store, service, platform_home / "dispatcher.lock")
    dispatcher.start()
    try:
        job_id = _submit(pg_store, "pg-run", steps=512)
        deadline = time.monotonic() + 120
        while pg_store.get(job_id).status not in TERMINAL and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        dispatcher.stop()
    job = pg_store.get(job_id)
    assert job.status == "succeeded", job.error
    assert job.result["timesteps"] == 512 and job.mlflow_run_id == job.result["run_id"]
    events = pg_store.events_after(job_id)
    ids = [e.id for e in events]
    assert ids == sorted(set(ids))
    statuses = [e.data["status"] for e in events if e.kind == "status"]
    assert statuses == ["queued", "running", "succeeded"]
    assert {"progress", "eval"} <= {e.kind for e in events}
