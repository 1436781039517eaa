"""The dashboard's session: the API key in a signed cookie, and the CSRF token tied to it.

The cookie is HttpOnly (page scripts never see the key), SameSite=Strict (other sites' pages
cannot send it) and signed with HMAC-SHA256 under a secret kept in the platform home (created
0600 on first use) or given by `PPO_PLATFORM_DASHBOARD_SECRET`. Every state-changing request
also carries the session's CSRF token (a form field or the `X-CSRF-Token` header).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

COOKIE = "ppo_session"
MAX_AGE_SECONDS = 12 * 3600
SECRET_ENV = "PPO_PLATFORM_DASHBOARD_SECRET"
SECRET_FILE = "dashboard.secret"


@dataclass(frozen=True)
class Session:
    """A signed-in browser: its API key and the nonce its CSRF token is derived from."""

    key: str
    nonce: str
    issued: int


def load_secret(home: Path) -> bytes:
    """The signing secret: from the environment, else the home's secret file (made once)."""
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


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _sign(secret: bytes, payload: str) -> str:
    return _b64(hmac.new(secret, payload.encode(), hashlib.sha256).digest())


def new_session(key: str) -> Session:
    return Session(key=key, nonce=secrets.token_urlsafe(16), issued=int(time.time()))


def encode_session(secret: bytes, session: Session) -> str:
    payload = _b64(json.dumps({"k": session.key, "n": session.nonce, "t": session.issued}).encode())
    return f"{payload}.{_sign(secret, payload)}"


def decode_session(secret: bytes, cookie: str | None) -> Session | None:
    """The session a cookie holds, or None if it is missing, forged, malformed or expired."""
    if not cookie or cookie.count(".") != 1:
        return None
    payload, signature = cookie.split(".")
    if not hmac.compare_digest(signature, _sign(secret, payload)):
        return None
    try:
        data = json.loads(_unb64(payload))
        session = Session(key=str(data["k"]), nonce=str(data["n"]), issued=int(data["t"]))
    except (ValueError, KeyError, TypeError):
        return None
    if time.time() - session.issued > MAX_AGE_SECONDS:
        return None
    return session


def csrf_token(secret: bytes, session: Session) -> str:
    return _sign(secret, f"csrf:{session.nonce}")


def csrf_valid(secret: bytes, session: Session, token: str | None) -> bool:
    return bool(token) and hmac.compare_digest(str(token), csrf_token(secret, session))
