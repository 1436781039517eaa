"""uvicorn's HTTP protocol with a deadline on each request head: a client that has not sent a
whole request line and headers within `header_timeout_seconds` of the connection (or of its
previous response) is disconnected, so slow-header clients cannot hold connections open.

uvicorn itself times out only idle keep-alive connections; a request body's pace is bounded
by the API's body middleware (`body_timeout_seconds`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from ppo_platform.jobs.config import get_service_settings


class HeadDeadlineProtocol(HttpToolsProtocol):
    """HttpToolsProtocol that closes a connection whose request head is late."""

    _head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._arm_head_deadline()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._head_deadline is None:  # a keep-alive connection's next request
            self._arm_head_deadline()

    def on_headers_complete(self) -> None:
        self._cancel_head_deadline()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_deadline()
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._cancel_head_deadline()

    def _arm_head_deadline(self) -> None:
        self._cancel_head_deadline()
        seconds = get_service_settings().header_timeout_seconds
        self._head_deadline = self.loop.call_later(seconds, self._head_too_late)

    def _cancel_head_deadline(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_too_late(self) -> None:
        self._head_deadline = None
        if not self.transport.is_closing():
            self.transport.close()
