"""The session cookie, CSRF and the report renderer, without a browser."""

from __future__ import annotations

import re

import httpx

from ppo_platform.api.dashboard.markdown import render
from ppo_platform.api.session import csrf_token, csrf_valid
from ppo_platform.jobs.web_sessions import OpenSession

SECRET = b"s" * 32


def test_the_csrf_token_belongs_to_one_session() -> None:
    first, second = OpenSession("id-one", "alice"), OpenSession("id-two", "alice")
    assert csrf_valid(SECRET, first, csrf_token(SECRET, first))
    assert not csrf_valid(SECRET, second, csrf_token(SECRET, first))
    assert not csrf_valid(b"t" * 32, first, csrf_token(SECRET, first))
    assert not csrf_valid(SECRET, first, None)


def test_report_markdown_is_escaped_and_only_file_names_become_links() -> None:
    html = render(
        "# Sweep report: <script>x</script>\n\n| a | b |\n|---|---|\n| `1` | **2** |\n\n"
        "![plot](returns.png)\n![evil](../../etc/passwd)\n[x](javascript:alert(1))",
        lambda name: f"/ui/experiments/e1/artifacts/{name}",
    )
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert '<img src="/ui/experiments/e1/artifacts/returns.png" alt="plot">' in html
    assert "evil" in html and "passwd" not in html and 'href="javascript' not in html
    assert "<td><code>1</code></td>\n<td><strong>2</strong></td>" in html


def _login(server, key: str) -> httpx.Client:
    client = httpx.Client(base_url=server.url, timeout=30)
    response = client.post("/login", data={"api_key": key})
    assert response.status_code == 303, response.text
    return client


def test_login_sets_an_httponly_samesite_strict_cookie(server, keys) -> None:
    response = httpx.post(f"{server.url}/login", data={"api_key": keys["alice"]})
    cookie = response.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
    assert keys["alice"] not in cookie  # signed base64, not the key in clear text


def test_pages_without_a_session_go_to_the_login_form(server) -> None:
    for path in ("/", "/submit", "/plan", "/experiments/nope"):
        response = httpx.get(f"{server.url}{path}", cookies={"ppo_session": "forged.value"})
        assert (response.status_code, response.headers["location"]) == (303, "/login"), path
    assert httpx.get(f"{server.url}/v1/experiments/x/events").status_code == 401


def test_writes_without_the_csrf_token_or_from_another_origin_are_refused(server, keys) -> None:
    client = _login(server, keys["alice"])
    page = client.get("/submit").text
    token = re.search(r'name="csrf-token" content="([^"]+)"', page)[1]
    spec = "name: x\nenv: {id: CartPole-v1}\nbudget: {total_timesteps: 2048}\n"
    headers = {"Content-Type": "application/yaml"}
    assert client.post("/ui/specs/validate", content=spec, headers=headers).status_code == 403
    evil = {**headers, "X-CSRF-Token": token, "Origin": "http://evil.example"}
    assert client.post("/ui/specs/validate", content=spec, headers=evil).status_code == 403
    good = client.post(
        "/ui/specs/validate", content=spec, headers={**headers, "X-CSRF-Token": token}
    )
    assert good.status_code == 200 and good.json()["valid"] is True
    # The /v1 routes take the session cookie as they take a key, with the same CSRF rule.
    for refused in (headers, evil):
        assert client.post("/v1/specs/validate", content=spec, headers=refused).status_code == 403
    signed = {**headers, "X-CSRF-Token": token}
    assert client.post("/v1/specs/validate", content=spec, headers=signed).status_code == 200
    assert client.post("/logout", data={}).status_code == 403
    assert client.post("/logout", data={"csrf_token": token}).status_code == 303
