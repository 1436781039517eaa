"""Failed dashboard logins per client address, in a sliding window: past the limit the login
form answers 429 with Retry-After until the oldest failure leaves the window.

Kept in the process (a restart forgets it; with `--workers N` each worker counts its own, so
the bound is N times the setting). Behind a reverse proxy every client has the proxy's address:
then the limit applies to all of them together.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque

MAX_ADDRESSES = 10_000


class LoginThrottle:
    """At most `attempts` failed logins per address in any `window` seconds."""

    def __init__(self, attempts: int, window: float) -> None:
        self.attempts, self.window = attempts, window
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def retry_after(self, address: str) -> int | None:
        """Seconds until `address` may try again, or None if it may now."""
        now = time.monotonic()
        with self._lock:
            failures = self._failures.get(address)
            if failures is None:
                return None
            while failures and failures[0] <= now - self.window:
                failures.popleft()
            if len(failures) < self.attempts:
                return None
            return max(1, math.ceil(failures[0] + self.window - now))

    def failed(self, address: str) -> None:
        with self._lock:
            if address not in self._failures and len(self._failures) >= MAX_ADDRESSES:
                self._drop_stale()
            self._failures.setdefault(address, deque(maxlen=self.attempts)).append(time.monotonic())

    def _drop_stale(self) -> None:
        cutoff = time.monotonic() - self.window
        self._failures = {a: f for a, f in self._failures.items() if f and f[-1] > cutoff}
        if len(self._failures) >= MAX_ADDRESSES:  # all recent: forget the lot, never grow
            self._failures.clear()
