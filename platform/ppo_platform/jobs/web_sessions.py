"""The dashboard's sessions, kept in the job store: the browser holds only a random id.

The cookie carries 32 random bytes (URL-safe text), never the API key; the store keeps the
SHA-256 of that id (a stolen database opens no session), the owner, the hash of the API key it
was opened with, an expiry and the logout time. A session is valid while it is neither expired
nor logged out and its API key is still valid: revoking the key (`ppo-platform keys revoke`, or
removing it from the settings) ends every session opened with it. Rows live in the store, so a
session survives a restart and is shared by every `--workers` process.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from dataclasses import dataclass

from sqlalchemy import delete, select, update

from ppo_platform.jobs.keys import hash_key
from ppo_platform.jobs.models import ApiKey, WebSession, utcnow
from ppo_platform.jobs.store import JobStore

SESSION_BYTES = 32


@dataclass(frozen=True)
class OpenSession:
    """A valid session: its id (the cookie's value) and the owner of its API key."""

    id: str
    owner: str


def hash_session_id(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()


def _aware(moment: dt.datetime) -> dt.datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)


def open_session(store: JobStore, owner: str, key: str, max_age_seconds: float) -> str:
    """A new session for `owner` signed in with `key`; returns its id (shown only to the
    browser). Sessions expired for a day are deleted on the way."""
    session_id = secrets.token_urlsafe(SESSION_BYTES)
    now = utcnow()
    with store.writing() as session:
        session.execute(
            delete(WebSession).where(WebSession.expires_at < now - dt.timedelta(days=1))
        )
        session.add(
            WebSession(
                id_hash=hash_session_id(session_id),
                owner=owner,
                key_hash=hash_key(key),
                created_at=now,
                expires_at=now + dt.timedelta(seconds=max_age_seconds),
            )
        )
    return session_id


def find_session(
    store: JobStore, session_id: str | None, settings_keys: dict[str, str]
) -> OpenSession | None:
    """The session `session_id` names if it is valid (not expired, not logged out, its API key
    not revoked), else None."""
    if not session_id or len(session_id) > 128:
        return None
    with store.read() as session:
        row = session.get(WebSession, hash_session_id(session_id))
        if row is None or row.revoked_at is not None or _aware(row.expires_at) <= utcnow():
            return None
        if row.key_hash in {hash_key(k) for k in settings_keys.values()}:
            return OpenSession(session_id, row.owner)
        key = session.scalars(
            select(ApiKey.id).where(ApiKey.key_hash == row.key_hash, ApiKey.revoked_at.is_(None))
        ).first()
    return None if key is None else OpenSession(session_id, row.owner)


def close_session(store: JobStore, session_id: str) -> None:
    """Log the session out: its id opens nothing any more, even if the cookie is replayed."""
    with store.writing() as session:
        session.execute(
            update(WebSession)
            .where(WebSession.id_hash == hash_session_id(session_id))
            .values(revoked_at=utcnow())
        )
