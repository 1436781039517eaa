"""The dashboard's session cookie and the CSRF token tied to it (checked by `api/deps.py`'s
owner dependency on every write that a cookie, not a bearer key, authenticates).

The cookie holds only a random session id (`ppo_platform.jobs.web_sessions`: the store keeps
its hash, owner, expiry and logout), never the API key. It is HttpOnly (page scripts never see
it) and SameSite=Strict (other sites' pages cannot send it). Every state-changing request also
carries the session's CSRF token (a form field or the `X-CSRF-Token` header): an HMAC-SHA256 of
the session id under a secret kept in the platform home (created 0600 on first use) or given by
`PPO_PLATFORM_DASHBOARD_SECRET`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
from pathlib import Path
from urllib.parse import urlsplit

from fastapi import HTTPException, Request

from ppo_platform.jobs.web_sessions import OpenSession

COOKIE = "ppo_session"
MAX_AGE_SECONDS = 12 * 3600
SECRET_ENV = "PPO_PLATFORM_DASHBOARD_SECRET"
SECRET_FILE = "dashboard.secret"
CSRF_HEADER = "X-CSRF-Token"


def load_secret(home: Path) -> bytes:
    """The CSRF secret: from the environment, else the home's secret file (made once)."""
    if configured := os.environ.get(SECRET_ENV):
        return configured.encode()
    path = home / SECRET_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_bytes().strip()
    with os.fdopen(fd, "w") as handle:
        handle.write(secrets.token_hex(32))
    return path.read_bytes().strip()


def csrf_token(secret: bytes, session: OpenSession) -> str:
    digest = hmac.new(secret, f"csrf:{session.id}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def csrf_valid(secret: bytes, session: OpenSession, token: str | None) -> bool:
    return bool(token) and hmac.compare_digest(str(token), csrf_token(secret, session))


def check_origin(request: Request) -> None:
    """A browser's POST names its origin: it must be this server (403 otherwise)."""
    origin = request.headers.get("origin")
    if origin is None:  # not a browser, or a same-origin GET
        return
    if urlsplit(origin).netloc != request.headers.get("host"):
        raise HTTPException(403, f"cross-origin request from {origin!r} refused.")


def check_csrf(request: Request, secret: bytes, session: OpenSession, token: str | None) -> None:
    """403 unless the request comes from this origin with the session's CSRF token (`token`,
    a form field, else the `X-CSRF-Token` header)."""
    check_origin(request)
    if not csrf_valid(secret, session, token or request.headers.get(CSRF_HEADER)):
        raise HTTPException(403, "missing or wrong CSRF token: reload the page and retry.")
