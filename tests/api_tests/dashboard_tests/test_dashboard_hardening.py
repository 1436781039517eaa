"""Dashboard sessions on the server, login rate limits and the form size bound, against the real
server (its SQLite job store read directly to see what is stored)."""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from ppo_platform.jobs.keys import create_key, revoke_key
from ppo_platform.jobs.store import JobStore


@contextmanager
def _login(url: str, key: str, **client: Any) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=url, timeout=30, **client) as http:
        response = http.post("/login", data={"api_key": key})
        assert response.status_code == 303, response.text
        yield http


def _signed_in(url: str, cookie: str) -> bool:
    """Does a browser holding only this cookie value reach the experiments page?"""
    response = httpx.get(f"{url}/", cookies={"ppo_session": cookie})
    return response.status_code == 200


def _sessions(home: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(home / "jobs.db") as db:
        return db.execute("SELECT id_hash, owner, key_hash FROM web_sessions").fetchall()


@pytest.fixture
def store(server) -> Iterator[JobStore]:
    opened = JobStore(f"sqlite:///{server.home / 'jobs.db'}", server.home, migrate_schema=False)
    yield opened
    opened.close()


def test_the_cookie_holds_a_random_id_and_the_store_only_its_hash(server, keys) -> None:
    with _login(server.url, keys["alice"]) as http:
        cookie = http.cookies["ppo_session"]
    assert keys["alice"] not in cookie and len(cookie) >= 40
    stored = {row[0]: row for row in _sessions(server.home)}
    assert cookie not in stored
    row = stored[hashlib.sha256(cookie.encode()).hexdigest()]
    assert row[1] == "alice" and row[2] == hashlib.sha256(keys["alice"].encode()).hexdigest()
    assert _signed_in(server.url, cookie)
    assert not _signed_in(server.url, cookie[:-1] + ("A" if cookie[-1] != "A" else "B"))


def test_logout_ends_the_session_on_the_server(server, keys) -> None:
    with _login(server.url, keys["alice"]) as http:
        cookie = http.cookies["ppo_session"]
        token = re.search(r'name="csrf-token" content="([^"]+)"', http.get("/").text)[1]
        assert http.post("/logout", data={"csrf_token": token}).status_code == 303
    assert not _signed_in(server.url, cookie)  # the old cookie, replayed


def test_an_expired_session_is_refused(server, keys) -> None:
    with _login(server.url, keys["bob"]) as http:
        cookie = http.cookies["ppo_session"]
    assert _signed_in(server.url, cookie)
    with sqlite3.connect(server.home / "jobs.db") as db:
        db.execute(
            "UPDATE web_sessions SET expires_at = '2000-01-01 00:00:00.000000' WHERE id_hash = ?",
            (hashlib.sha256(cookie.encode()).hexdigest(),),
        )
    assert not _signed_in(server.url, cookie)


def test_revoking_the_key_ends_its_sessions(server, store) -> None:
    key = create_key(store, "carol")
    with _login(server.url, key) as http:
        cookie = http.cookies["ppo_session"]
    assert _signed_in(server.url, cookie)
    revoke_key(store, "carol")
    assert not _signed_in(server.url, cookie)


def test_failed_logins_are_limited_per_client_address(server_factory, tmp_path, keys) -> None:
    limited = server_factory(tmp_path, PPO_PLATFORM_LOGIN_ATTEMPTS="3")
    try:
        for _ in range(3):
            refused = httpx.post(f"{limited.url}/login", data={"api_key": "wrong-key"})
            assert refused.status_code == 401
        blocked = httpx.post(f"{limited.url}/login", data={"api_key": keys["alice"]})
        assert blocked.status_code == 429
        assert 1 <= int(blocked.headers["Retry-After"]) <= 60
        assert "too many failed logins" in blocked.text
        # Another client address (loopback 127.0.0.2) still signs in.
        other = httpx.HTTPTransport(local_address="127.0.0.2")
        with _login(limited.url, keys["alice"], transport=other):
            pass
    finally:
        limited.kill()


def test_a_form_past_the_limit_is_413_also_when_streamed(server, keys) -> None:
    big = {"api_key": "x" * 70_000}
    assert httpx.post(f"{server.url}/login", data=big).status_code == 413

    def chunks() -> Iterator[bytes]:  # no Content-Length: the body is counted as it comes
        yield b"api_key="
        for _ in range(20):
            yield b"x" * 8192

    streamed = httpx.post(
        f"{server.url}/login",
        content=chunks(),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert streamed.status_code == 413
    assert "64" in streamed.json()["message"] or "65536" in streamed.json()["message"]
    with _login(server.url, keys["alice"]):  # small forms still work
        pass
