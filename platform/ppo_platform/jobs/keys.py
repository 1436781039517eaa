"""API keys: created once and shown once, stored only as SHA-256 hashes, revoked by name.

A key is 32 random bytes (URL-safe text), so a plain SHA-256 of it cannot be brute-forced and
can be looked up directly. Keys from settings (`PPO_PLATFORM_API_KEYS`) are hashed the same way
and never written to the store.

`KeyCache` keeps hash -> owner for a few seconds (`PPO_PLATFORM_KEY_CACHE_SECONDS`, default 5),
so a request need not query the store to know its caller. A key revoked through the same
`KeyCache` is forgotten at once; one revoked by another process (`ppo-platform keys revoke`)
stops working here within the cache's TTL. Unknown keys are never cached.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading
import time
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


class KeyCache:
    """hash -> (owner, expiry) for known keys, `ttl` seconds each (0 disables the cache)."""

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._owners: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def get(self, key_hash: str) -> str | None:
        found = self._owners.get(key_hash)
        if found is None:
            return None
        if found[1] <= time.monotonic():
            with self._lock:
                self._owners.pop(key_hash, None)
            return None
        return found[0]

    def get_key(self, key: str) -> str | None:
        """The cached owner of `key` (not its hash), or None."""
        return self.get(hash_key(key))

    def put(self, key_hash: str, owner: str) -> None:
        if self.ttl <= 0:
            return
        with self._lock:
            if len(self._owners) >= 10_000:  # many keys: start over rather than grow
                self._owners.clear()
            self._owners[key_hash] = (owner, time.monotonic() + self.ttl)

    def forget(self, owner: str) -> None:
        with self._lock:
            self._owners = {h: v for h, v in self._owners.items() if v[0] != owner}


def revoke_key(store: JobStore, name: str, cache: KeyCache | None = None) -> None:
    with store.writing() as session:
        done = session.execute(
            update(ApiKey)
            .where(ApiKey.name == name, ApiKey.revoked_at.is_(None))
            .values(revoked_at=utcnow())
        )
    if cache is not None:
        cache.forget(name)
    if not done.rowcount:  # type: ignore[attr-defined]
        raise NotFoundError(f"no active key named {name!r}.")


def settings_owner(key: str, settings_keys: dict[str, str]) -> str | None:
    """The owner of `key` among the keys from settings (compared in constant time)."""
    for name, known in settings_keys.items():
        if hmac.compare_digest(known.encode(), key.encode("utf-8", "surrogatepass")):
            return name
    return None


def stored_owner(store: JobStore, key: str, cache: KeyCache | None = None) -> str | None:
    """The owner of `key` among the stored keys (through `cache` when given), or None."""
    key_hash = hash_key(key)
    if cache is not None and (owner := cache.get(key_hash)) is not None:
        return owner
    with store.read() as session:
        row = session.scalars(
            select(ApiKey).where(ApiKey.key_hash == key_hash, ApiKey.revoked_at.is_(None))
        ).first()
    if row is None:
        return None
    if cache is not None:
        cache.put(key_hash, row.name)
    return row.name


def authenticate(
    store: JobStore, key: str, settings_keys: dict[str, str], cache: KeyCache | None = None
) -> str | None:
    """The owner name of `key`, or None if it is unknown or revoked."""
    return settings_owner(key, settings_keys) or stored_owner(store, key, cache)
