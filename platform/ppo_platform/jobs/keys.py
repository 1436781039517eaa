"""API keys: created once and shown once, stored only as SHA-256 hashes, revoked by name.

A key is 32 random bytes (URL-safe text), so a plain SHA-256 of it cannot be brute-forced and
can be looked up directly. Keys from settings (`PPO_PLATFORM_API_KEYS`) are hashed the same way
and never written to the store.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from ppo_platform.errors import BadInputError, ConflictError, NotFoundError, SpecIssue
from ppo_platform.jobs.models import ApiKey, utcnow
from ppo_platform.jobs.store import JobStore

KEY_PREFIX = "ppk_"
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class KeyInfo:
    name: str
    created_at: str
    revoked: bool


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def _check_name(name: str) -> None:
    if not NAME_PATTERN.fullmatch(name):
        raise BadInputError(
            [
                SpecIssue(
                    "name",
                    "is not a valid key name.",
                    name,
                    fix="use 1-64 letters, digits, '_', '.' or '-', starting with a letter "
                    "or digit.",
                )
            ]
        )


def create_key(store: JobStore, name: str) -> str:
    """A new key for owner `name`; the only time its text exists outside the caller."""
    _check_name(name)
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    try:
        with store.writing() as session:
            session.add(ApiKey(name=name, key_hash=hash_key(key), created_at=utcnow()))
    except IntegrityError:
        raise ConflictError(
            [SpecIssue("name", "a key with this name exists already.", name, fix="pick another.")]
        ) from None
    return key


def list_keys(store: JobStore) -> list[KeyInfo]:
    with store.read() as session:
        rows = session.scalars(select(ApiKey).order_by(ApiKey.id))
        return [KeyInfo(r.name, r.created_at.isoformat(), r.revoked_at is not None) for r in rows]


def revoke_key(store: JobStore, name: str) -> None:
    with store.writing() as session:
        done = session.execute(
            update(ApiKey)
            .where(ApiKey.name == name, ApiKey.revoked_at.is_(None))
            .values(revoked_at=utcnow())
        )
    if not done.rowcount:  # type: ignore[attr-defined]
        raise NotFoundError(f"no active key named {name!r}.")


def authenticate(store: JobStore, key: str, settings_keys: dict[str, str]) -> str | None:
    """The owner name of `key`, or None if it is unknown or revoked."""
    for name, known in settings_keys.items():
        if hmac.compare_digest(known.encode(), key.encode("utf-8", "surrogatepass")):
            return name
    with store.read() as session:
        row = session.scalars(
            select(ApiKey).where(ApiKey.key_hash == hash_key(key), ApiKey.revoked_at.is_(None))
        ).first()
    return None if row is None else row.name
