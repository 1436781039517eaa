"""Headers every response carries: a strict Content-Security-Policy (scripts, styles and images
only from this server, no inline script or style, no framing), no MIME sniffing, no referrer
leaking ids to other sites.

Pages put no script, style or event handler in their markup, so the policy costs them nothing;
if markup ever got in (a report's text), the browser would still run none of it.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "media-src 'self'; connect-src 'self'; font-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'; object-src 'none'"
)
# FastAPI's /docs and /redoc pages load their viewer from a CDN with an inline script; they
# show only the OpenAPI document, never user data.
API_DOCS_POLICY = (
    "default-src 'none'; script-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net; "
    "style-src 'self' https://cdn.jsdelivr.net https://fonts.googleapis.com; "
    "font-src https://fonts.gstatic.com; img-src 'self' data: https://fastapi.tiangolo.com "
    "https://cdn.redoc.ly; connect-src 'self'; worker-src blob:; frame-ancestors 'none'; "
    "base-uri 'none'; object-src 'none'"
)
API_DOCS_PATHS = frozenset({"/docs", "/redoc"})
OTHER_HEADERS = [
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
]


def security_headers(path: str) -> list[tuple[bytes, bytes]]:
    policy = API_DOCS_POLICY if path in API_DOCS_PATHS else CONTENT_SECURITY_POLICY
    return [(b"content-security-policy", policy.encode()), *OTHER_HEADERS]


class SecurityHeadersMiddleware:
    """Adds `security_headers` to every HTTP response (a route's own value wins)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        added = security_headers(scope.get("path", ""))

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                headers += [(k, v) for k, v in added if k not in present]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)
