"""The job store: migrations, idempotent submission, cursor pages, cancel, events, keys."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy import inspect, text

from ppo_platform.errors import ConflictError, LimitError, NotFoundError, SpecError
from ppo_platform.jobs import JobStore, get_service_settings, prepare_submission
from ppo_platform.jobs.keys import authenticate, create_key, list_keys, revoke_key

TINY_RUN = """name: tiny
env: {id: ppo_platform/GridWorld-v0, n_envs: 1}
rollout: {n_steps: 64}
budget: {total_timesteps: %d}
"""


def _submit(store: JobStore, owner: str = "alice", key: str | None = None) -> str:
    job, _ = store.submit(owner, prepare_submission(TINY_RUN % 512, 10**6), key, 100)
    return job.id


def test_migrations_create_every_table_and_run_again_as_a_no_op(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    JobStore(url, tmp_path).close()
    store = JobStore(url, tmp_path)  # second start: already at head
    assert {"experiments", "events", "api_keys", "alembic_version"} <= set(
        inspect(store.engine).get_table_names()
    )
    store.close()


def test_submit_queues_a_run_with_its_resolved_spec_and_a_status_event(store: JobStore) -> None:
    job = store.get(_submit(store))
    assert (job.status, job.kind, job.name, job.total_timesteps) == ("queued", "run", "tiny", 512)
    assert job.spec["env"]["id"] == "ppo_platform/GridWorld-v0"
    assert [(e.kind, e.data) for e in store.events_after(job.id)] == [
        ("status", {"status": "queued"})
    ]


def test_same_idempotency_key_returns_the_first_experiment(store: JobStore) -> None:
    first = _submit(store, key="k1")
    assert _submit(store, key="k1") == first
    assert _submit(store, owner="bob", key="k1") != first  # keys are per owner
    assert len(store.page("alice")[0]) == 1


def test_list_pages_newest_first_with_a_cursor(store: JobStore) -> None:
    ids = [_submit(store) for _ in range(5)]
    page, cursor = store.page("alice", limit=2)
    assert [j.id for j in page] == ids[:-3:-1]
    page2, cursor2 = store.page("alice", limit=2, cursor=cursor)
    page3, cursor3 = store.page("alice", limit=2, cursor=cursor2)
    assert [j.id for j in page + page2 + page3] == ids[::-1]
    assert cursor3 is None
    assert store.page("alice", status="running")[0] == []
    assert store.page("bob")[0] == []


def test_other_owner_gets_not_found(store: JobStore) -> None:
    job_id = _submit(store)
    with pytest.raises(NotFoundError):
        store.get(job_id, "bob")
    with pytest.raises(NotFoundError):
        store.cancel(job_id, "bob")


def test_cancel_queued_is_final_and_cancel_finished_is_a_conflict(store: JobStore) -> None:
    job_id = _submit(store)
    assert store.cancel(job_id, "alice").status == "cancelled"
    assert not store.mark_running(job_id)  # a cancelled job never starts
    other = _submit(store)
    assert store.mark_running(other)
    assert store.finish(other, "succeeded", result={"x": 1})
    with pytest.raises(ConflictError):
        store.cancel(other, "alice")


def test_queue_limit_names_the_limit(store: JobStore) -> None:
    job = prepare_submission(TINY_RUN % 512, 10**6)
    store.submit("alice", job, None, 1)
    with pytest.raises(LimitError, match="max_queued"):
        store.submit("alice", job, None, 1)


def test_env_step_limit_and_unregistered_env_are_spec_errors() -> None:
    with pytest.raises(SpecError, match="max_env_steps") as caught:
        prepare_submission(TINY_RUN % 5000, 1000)
    assert caught.value.issues[0].path == "budget.total_timesteps"
    with pytest.raises(SpecError, match=r"env\.id"):
        prepare_submission("name: x\nenv: os:system\n", 10**6)


def test_envs_ppo_cannot_use_are_refused_before_queueing() -> None:
    with pytest.raises(SpecError, match="Tuple observation space") as caught:
        prepare_submission("name: x\nenv: Blackjack-v1\n", 10**6)
    assert caught.value.issues[0].path == "env.id"
    with pytest.raises(SpecError, match="render_mode") as caught:
        prepare_submission("name: x\nenv: {id: CartPole-v1, kwargs: {render_mode: human}}\n", 10**6)
    assert caught.value.issues[0].path == "env.kwargs.render_mode"
    sweep = (
        "name: x\nenv: CartPole-v1\n"
        "sweep: {grid: {env.kwargs.render_mode: [rgb_array, human]}, seeds: [0]}\n"
    )
    with pytest.raises(SpecError, match="render_mode"):
        prepare_submission(sweep, 10**6)


def test_events_after_an_id_and_alert_counts(store: JobStore) -> None:
    job_id = _submit(store)
    first = store.events_after(job_id)[0].id
    a = store.append_event(job_id, "alert", {"message": "kl"})
    b = store.append_event(job_id, "progress", {"timesteps": 64}, progress={"timesteps": 64})
    assert first < a < b
    assert [e.id for e in store.events_after(job_id, first)] == [a, b]
    assert [e.id for e in store.events_after(job_id, kinds=["alert"])] == [a]
    job = store.get(job_id)
    assert (job.alerts, job.progress) == (1, {"timesteps": 64})


def test_keys_are_stored_hashed_and_revocable(store: JobStore) -> None:
    key = create_key(store, "alice")
    assert authenticate(store, key, {}) == "alice"
    assert authenticate(store, key + "x", {}) is None
    assert authenticate(store, "from-settings", {"carol": "from-settings"}) == "carol"
    with store.read() as session:
        stored = session.execute(text("SELECT key_hash FROM api_keys")).scalar_one()
    assert key not in stored and len(stored) == 64
    with pytest.raises(ConflictError):
        create_key(store, "alice")
    revoke_key(store, "alice")
    assert authenticate(store, key, {}) is None
    assert [(k.name, k.revoked) for k in list_keys(store)] == [("alice", True)]
    with pytest.raises(NotFoundError):
        revoke_key(store, "alice")


def test_key_cache_remembers_known_keys_until_revoked_or_expired(store: JobStore) -> None:
    from ppo_platform.jobs.keys import KeyCache, hash_key

    cache = KeyCache(ttl=60)
    key = create_key(store, "dave")
    assert authenticate(store, key, {}, cache) == "dave"
    assert cache.get_key(key) == "dave"
    assert authenticate(store, "ppk_unknown", {}, cache) is None and len(cache._owners) == 1
    revoke_key(store, "dave", cache)  # revoked in this process: forgotten at once
    assert cache.get_key(key) is None and authenticate(store, key, {}, cache) is None
    other = create_key(store, "erin")
    short = KeyCache(ttl=0.2)
    assert authenticate(store, other, {}, short) == "erin"
    revoke_key(store, "erin")  # another process revoking: the cache answers until its TTL
    assert authenticate(store, other, {}, short) == "erin"
    time.sleep(0.25)
    assert short.get(hash_key(other)) is None and authenticate(store, other, {}, short) is None


@pytest.mark.parametrize(("setting", "pragma"), [(None, 1), ("full", 2)])
def test_sqlite_commits_are_fsynced_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str | None, pragma: int
) -> None:
    if setting:
        monkeypatch.setenv("PPO_PLATFORM_JOBS_SQLITE_SYNCHRONOUS", setting)
    get_service_settings.cache_clear()
    store = JobStore(f"sqlite:///{tmp_path / 'jobs.db'}", tmp_path)
    try:
        with store.read() as session:  # 1 = NORMAL (WAL: durable across crashes), 2 = FULL
            assert session.execute(text("PRAGMA synchronous")).scalar_one() == pragma
    finally:
        store.close()
        get_service_settings.cache_clear()
