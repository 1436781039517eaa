"""Finding 10: /readyz is 503 while no process dispatches jobs; malformed headers are 4xx;
an aborted /login body is one log line, not a traceback."""

from __future__ import annotations

import fcntl
import socket
import time

import httpx

from tests.api_tests.conftest import Server, free_port


def test_readyz_is_503_while_no_dispatcher_runs_and_200_once_one_does(tmp_path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with (home / "dispatcher.lock").open(
        "a"
    ) as held:  # a process that holds it, dispatching nothing
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        server = Server(home, free_port())
        try:
            server.start(wait_ready=False)
            deadline = time.monotonic() + 60
            while not httpx.get(f"{server.url}/readyz", timeout=30).json()["job_store"]:
                assert time.monotonic() < deadline, "the job service did not open"
                time.sleep(0.2)
            answers = [httpx.get(f"{server.url}/readyz", timeout=30) for _ in range(3)]
            assert [a.status_code for a in answers] == [503] * 3
            assert answers[-1].json()["dispatcher"] is False
            assert answers[-1].json()["job_store"] is True
            fcntl.flock(held, fcntl.LOCK_UN)
            deadline = time.monotonic() + 30
            while httpx.get(f"{server.url}/readyz", timeout=30).status_code != 200:
                assert time.monotonic() < deadline, "the standby dispatcher never took over"
                time.sleep(0.5)
        finally:
            server.kill()


def _raw_request(server: Server, head: bytes) -> int:
    """Send `head` as is (bytes httpx would refuse to send) and return the status code."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(head)
        answer = b""
        while b"\r\n" not in answer:
            chunk = sock.recv(4096)
            if not chunk:
                break
            answer += chunk
    return int(answer.split(b" ", 2)[1])


def test_a_junk_last_event_id_is_a_4xx_never_a_500(server, alice, keys, tiny, post_spec) -> None:
    job = post_spec(alice, tiny(steps=64, every=64)).json()
    route = f"/v1/experiments/{job['id']}/events"
    for junk in ("9" * 4301, "9" * 20, "-1", "1e3", "1 2", "0x10"):
        response = alice.get(route, headers={"Last-Event-ID": junk})
        assert response.status_code == 422, (junk[:30], response.status_code)
        assert response.json()["issues"][0]["path"] == "Last-Event-ID"
    auth = f"Authorization: Bearer {keys['alice']}\r\n".encode()
    for raw in (b"Last-Event-ID: \xff\xfe\r\n", b"Last-Event-ID: \xc2\xb2\r\n"):
        head = b"GET " + route.encode() + b" HTTP/1.1\r\nHost: x\r\n" + auth + raw + b"\r\n"
        assert 400 <= _raw_request(server, head) < 500
    with alice.stream("GET", route, headers={"Last-Event-ID": "0"}) as stream:
        assert stream.status_code == 200


def test_non_ascii_bytes_in_any_header_are_never_a_500(server, keys) -> None:
    for raw in (
        b"Authorization: Bearer \xff\xfe\r\n",
        b"Authorization: Bearer " + keys["alice"].encode() + b"\r\nIdempotency-Key: \xe9\r\n",
        b"Authorization: Bearer " + keys["alice"].encode() + b"\r\nContent-Type: \xff/\xff\r\n",
        b"Cookie: ppo_session=\xff\xfe\r\n",
    ):
        for method, route in (("GET", "/v1/experiments"), ("POST", "/v1/specs/validate"),
                              ("GET", "/")):  # fmt: skip
            head = f"{method} {route} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n".encode()
            status = _raw_request(server, head + raw + b"\r\n")
            assert status < 500, (method, route, raw, status)


def test_an_aborted_login_body_logs_one_line_not_a_traceback(server) -> None:
    log = server.home / "server.log"
    before = log.read_bytes()
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
            sock.sendall(
                b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Type: "
                b"application/x-www-form-urlencoded\r\nContent-Length: 5000\r\n\r\napi_key=abc"
            )
            time.sleep(0.3)  # the server is reading the body when the client goes
    time.sleep(1.0)
    added = log.read_bytes()[len(before) :].decode(errors="replace")
    assert "Traceback" not in added and "ClientDisconnect" not in added, added[-2000:]
