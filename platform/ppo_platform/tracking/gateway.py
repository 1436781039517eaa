"""The one MLflow gateway: every `MlflowClient` is built here, and every call retries here.

Several processes writing one SQLite store meet lock contention. MLflow reports it (and any
other database hiccup) as an `MlflowException` with the error code TEMPORARILY_UNAVAILABLE, so
retries key on that code, never on the text of a message.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, TypeVar

from ppo_platform.tracking.sqlite_store import SQLITE_PREFIX as SQLITE_PREFIX
from ppo_platform.tracking.sqlite_store import create_sqlite_store

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

T = TypeVar("T")
RETRY_ATTEMPTS = 8
TRANSIENT_ERROR_CODES = frozenset({"TEMPORARILY_UNAVAILABLE"})


@lru_cache(maxsize=8)
def tracking_client(tracking_uri: str) -> MlflowClient:
    """The client for `tracking_uri`, one per URI and process."""
    from mlflow.tracking import MlflowClient

    if tracking_uri.startswith(SQLITE_PREFIX):  # created once, whoever comes first
        create_sqlite_store(tracking_uri)
    return MlflowClient(tracking_uri)


def is_transient(error: BaseException) -> bool:
    """True for MLflow errors that a later attempt may not meet (locked or unreachable store)."""
    from mlflow.exceptions import MlflowException

    return isinstance(error, MlflowException) and error.error_code in TRANSIENT_ERROR_CODES


def retry(call: Callable[[], T], attempts: int = RETRY_ATTEMPTS) -> T:
    """Call `call`, retrying transient store errors with jittered exponential backoff."""
    for attempt in range(attempts):
        try:
            return call()
        except Exception as error:
            if not is_transient(error) or attempt == attempts - 1:
                raise
            time.sleep(0.05 * 2**attempt * (1 + random.random()))
    raise AssertionError("unreachable")
