"""The request body cap (413), checked before a route reads the body, and its pace: a body
that stalls longer than the body timeout between chunks is answered 408."""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ppo_platform.api.errors import error_response


class BodyTooLarge(Exception):
    pass


class BodyTooSlow(Exception):
    pass


class BodyLimitMiddleware:
    """413 for a declared Content-Length over the cap, and for a streamed body that grows
    past it (chunked uploads declare no length)."""

    def __init__(self, app: ASGIApp, max_bytes: int, body_timeout: float = 30.0) -> None:
        self.app, self.max_bytes, self.body_timeout = app, max_bytes, body_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._reject(scope, receive, send)
            return
        seen = 0
        started = False
        body_done = False

        async def counting_receive() -> Message:
            nonlocal seen, body_done
            if body_done:  # later receives wait for the disconnect (streams): no deadline
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), self.body_timeout)
            except TimeoutError:
                raise BodyTooSlow from None
            body_done = not message.get("more_body", False)
            seen += len(message.get("body", b""))
            if seen > self.max_bytes:
                raise BodyTooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except BodyTooLarge:
            if not started:
                await self._reject(scope, receive, send)
        except BodyTooSlow:
            if not started:
                response: Any = error_response(
                    408,
                    "RequestTimeout",
                    f"the request body stalled for {self.body_timeout:g} s "
                    "(PPO_PLATFORM_BODY_TIMEOUT_SECONDS).",
                )
                await response(scope, receive, send)

    async def _reject(self, scope: Scope, receive: Receive, send: Send) -> None:
        response: Any = error_response(
            413,
            "PayloadTooLarge",
            f"the request body is over the limit of {self.max_bytes} bytes "
            "(PPO_PLATFORM_MAX_BODY_BYTES).",
        )
        await response(scope, receive, send)
