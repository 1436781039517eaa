"""Per-key limits of the API process: a request rate for writes (a token bucket per key) and a
number of open event streams. Both answer 429 with Retry-After (LimitError) past the limit.

They hold per process: `serve --workers N` gives each worker its own buckets and counts.
"""

from __future__ import annotations

import threading
import time
import weakref
from dataclasses import dataclass

from ppo_platform.errors import LimitError

READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})  # not charged to the write rate


@dataclass
class _Bucket:
    tokens: float
    stamp: float


class KeyRateLimiter:
    """`rate` requests a second per key on average, `burst` at once."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate, self.burst = rate, burst
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()

    def charge(self, owner: str) -> None:
        """Take one request from `owner`'s bucket; LimitError (with the wait) if it is empty."""
        now = time.monotonic()
        with self._lock:
            bucket = self._buckets.setdefault(owner, _Bucket(float(self.burst), now))
            bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.stamp) * self.rate)
            bucket.stamp = now
            if bucket.tokens < 1:
                wait = (1 - bucket.tokens) / self.rate
                raise LimitError(
                    f"too many requests from this key: at most {self.rate:g} a second "
                    f"(PPO_PLATFORM_KEY_REQUESTS_PER_SECOND); retry in {wait:.1f} s.",
                    retry_after=wait,
                )
            bucket.tokens -= 1


class StreamSlots:
    """At most `limit` open event streams per key; a slot is freed when its stream is gone."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._open: dict[str, int] = {}
        self._lock = threading.Lock()

    def open_count(self, owner: str) -> int:
        with self._lock:
            return self._open.get(owner, 0)

    def hold(self, owner: str, stream: object) -> None:
        """Count `stream` against `owner` until it is garbage (finished, closed or never
        started: a finalizer, not the generator's own `finally`, which may never run)."""
        with self._lock:
            if self._open.get(owner, 0) >= self.limit:
                raise LimitError(
                    f"this key already has {self.limit} event streams open "
                    "(PPO_PLATFORM_MAX_STREAMS); close one and retry.",
                    retry_after=5,
                )
            self._open[owner] = self._open.get(owner, 0) + 1
        weakref.finalize(stream, self._release, owner)

    def _release(self, owner: str) -> None:
        with self._lock:
            self._open[owner] -= 1
            if not self._open[owner]:
                del self._open[owner]
