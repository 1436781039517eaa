"""The API benchmarks' load generator: keep-alive requests against a real socket server, its
Server-Timing parsing, and the latency benchmark's breakdown of a submission's time."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from benchmarks.service.api_latency import breakdown
from benchmarks.service.load_client import Timings, run_clients, server_timing


def test_server_timing_is_read_phase_by_phase() -> None:
    header = "body;dur=0.10, intake-wait;dur=12.50, validate;dur=0.31, total;dur=13.20"
    assert server_timing(header) == {
        "body": 0.1,
        "intake-wait": 12.5,
        "validate": 0.31,
        "total": 13.2,
    }
    assert server_timing("") == {}


def serve_in_thread(answers: list[str]) -> tuple[int, threading.Event]:
    """A socket server answering each request on a connection, in turn: 202 to a POST with an
    id and a Server-Timing header, 200 to a GET; it records the request lines it read."""
    ready, port_box = threading.Event(), []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:  # the client closed its connection
                break
            lines = head.decode().split("\r\n")
            answers.append(lines[0])
            length = next(
                (int(line.split(":")[1]) for line in lines if line.startswith("Content-Length")), 0
            )
            await reader.readexactly(length)
            if lines[0].startswith("POST"):
                body = b'{"id":"exp-%d","status":"queued"}' % len(answers)
                extra = b"Server-Timing: intake-wait;dur=2.00, total;dur=3.00\r\n"
                status = b"202 Accepted"
            else:
                body, extra, status = b'{"status":"running"}', b"", b"200 OK"
            writer.write(
                b"HTTP/1.1 "
                + status
                + b"\r\nContent-Length: %d\r\n" % len(body)
                + extra
                + b"\r\n"
                + body
            )
            await writer.drain()

    def run() -> None:
        async def main() -> None:
            server = await asyncio.start_server(handle, "127.0.0.1", 0)
            port_box.append(server.sockets[0].getsockname()[1])
            ready.set()
            await asyncio.sleep(30)

        asyncio.run(main())

    threading.Thread(target=run, daemon=True).start()
    ready.wait(10)
    return int(port_box[0]), ready


def test_each_client_submits_its_specs_then_reads_status_on_one_connection() -> None:
    seen: list[str] = []
    port, _ = serve_in_thread(seen)
    specs = [[b"name: a\n", b"name: b\n"], [b"name: c\n", b"name: d\n"]]
    timings = run_clients("127.0.0.1", port, "key", specs, "job-1")
    assert len(timings.submit) == len(timings.status) == 4 and not timings.errors
    assert len(set(timings.accepted)) == 4
    assert all(found.startswith("exp-") for found in timings.accepted)
    assert seen.count("POST /v1/experiments HTTP/1.1") == 4
    assert seen.count("GET /v1/experiments/job-1 HTTP/1.1") == 4
    assert all(p == {"intake-wait": 2.0, "total": 3.0} for p in timings.phases)
    assert all(ms > 0 for ms in timings.submit + timings.status)


def test_the_clients_run_even_where_a_loop_runs_already() -> None:
    """Called from a thread whose event loop is running (as in a suite where another test's
    loop is still running), the clients still run: on a loop of their own."""
    seen: list[str] = []
    port, _ = serve_in_thread(seen)

    async def inside_a_loop() -> Timings:
        return run_clients("127.0.0.1", port, "key", [[b"name: a\n"]], "job-1")

    # A thread of the test's own with a running loop (this thread may run one already).
    with ThreadPoolExecutor(1) as pool:
        timings = pool.submit(asyncio.run, inside_a_loop()).result(timeout=60)
    assert len(timings.submit) == 1 and not timings.errors


def test_the_breakdown_takes_the_median_and_the_slowest_percent() -> None:
    timings = Timings()
    for n in range(100):  # client ms 10..109; the server's total is 8 ms less
        timings.submit.append(10.0 + n)
        timings.phases.append(
            {
                "body": 0.1,
                "intake-wait": 5.0 + n,
                "validate": 0.5,
                "store": 1.0,
                "render": 0.2,
                "answer": 0.2,
                "total": 2.0 + n,
            }
        )
    found = breakdown(timings)
    assert found is not None
    assert found["median"]["outside"] == pytest.approx(8.0)
    assert found["median"]["intake-wait"] == pytest.approx(54.5)
    # p99 of 100 is the 99th value: the slowest are the 99th and the 100th
    assert found["slowest_1pct"]["intake-wait"] == pytest.approx((5.0 + 98 + 5.0 + 99) / 2)
    assert breakdown(Timings(submit=[1.0], phases=[{}])) is None
