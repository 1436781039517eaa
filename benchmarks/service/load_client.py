"""The load generator of the API benchmarks: `clients` HTTP/1.1 keep-alive connections driven
by one asyncio loop, each a closed loop of one submission then one status read.

Why not a thread per client with httpx (what `api_latency` used until #38): on the benchmark's
own 2 cores, 50 client threads spent 3.5-4.5 ms of CPU per submit+status pair fighting for
their process's GIL (1.2 ms with one client), so the server shared its cores with the load
generator's contention, and a response that had arrived waited for a client thread to be
scheduled before its time was taken. Here a request costs the client about a tenth of that: it
writes the bytes, and the time is taken when the response's last byte is read, as `wrk` does.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field


@dataclass
class Timings:
    """Milliseconds per request kind, and the requests answered with an unexpected status."""

    submit: list[float] = field(default_factory=list)
    status: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    accepted: list[str] = field(default_factory=list)  # ids of the queued submissions
    phases: list[dict[str, float]] = field(default_factory=list)  # per submit: Server-Timing

    def merge(self, other: Timings) -> None:
        self.submit += other.submit
        self.status += other.status
        self.errors += other.errors
        self.accepted += other.accepted
        self.phases += other.phases


def server_timing(header: str) -> dict[str, float]:
    """`name;dur=ms, ...` -> {name: ms}."""
    phases = {}
    for item in filter(None, (part.strip() for part in header.split(","))):
        name, _, duration = item.partition(";dur=")
        phases[name] = float(duration or "nan")
    return phases


class Connection:
    """One keep-alive connection: `request` sends and reads one whole response."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str):
        self.reader, self.writer, self.host = reader, writer, host

    @classmethod
    async def open(cls, host: str, port: int) -> Connection:
        reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer, f"{host}:{port}")

    async def request(
        self, method: str, path: str, headers: dict[str, str], body: bytes = b""
    ) -> tuple[int, bytes, float, dict[str, str]]:
        """(status code, body, milliseconds from the first byte sent to the last read, the
        response's headers by lower-case name)."""
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        if body or method == "POST":
            lines.append(f"Content-Length: {len(body)}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode()
        started = time.perf_counter()
        self.writer.write(head + body)
        await self.writer.drain()
        status_line = await self.reader.readuntil(b"\r\n")
        answer: dict[str, str] = {}
        while (line := await self.reader.readuntil(b"\r\n")) != b"\r\n":
            name, _, value = line.decode("latin-1").partition(":")
            answer[name.strip().lower()] = value.strip()
        content = await self.reader.readexactly(int(answer.get("content-length", 0)))
        elapsed = (time.perf_counter() - started) * 1000
        return int(status_line.split()[1]), content, elapsed, answer

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


async def one_client(host: str, port: int, key: str, specs: list[bytes], job_id: str) -> Timings:
    """Each spec in turn: submit it, then read the training job's status."""
    timings = Timings()
    connection = await Connection.open(host, port)
    auth = {"Authorization": f"Bearer {key}"}
    submit_headers = {**auth, "Content-Type": "application/yaml"}
    try:
        for spec in specs:
            code, body, ms, answer = await connection.request(
                "POST", "/v1/experiments", submit_headers, spec
            )
            timings.submit.append(ms)
            timings.phases.append(server_timing(answer.get("server-timing", "")))
            if code == 202:
                timings.accepted.append(body.split(b'"id":"', 1)[1].split(b'"', 1)[0].decode())
            else:
                timings.errors.append(f"submit {code}: {body[:200]!r}")
            code, body, ms, _ = await connection.request("GET", f"/v1/experiments/{job_id}", auth)
            timings.status.append(ms)
            if code != 200:
                timings.errors.append(f"status {code}: {body[:200]!r}")
    finally:
        await connection.close()
    return timings


async def _all_clients(
    host: str, port: int, key: str, specs: list[list[bytes]], job_id: str
) -> Timings:
    done = await asyncio.gather(*(one_client(host, port, key, s, job_id) for s in specs))
    timings = Timings()
    for each in done:
        timings.merge(each)
    return timings


def run_clients(host: str, port: int, key: str, specs: list[list[bytes]], job_id: str) -> Timings:
    """One client per list in `specs`, all at once, each submitting its specs in turn (on a
    loop of their own in a thread of their own: the caller's thread may run a loop already)."""
    with ThreadPoolExecutor(1, thread_name_prefix="load-client") as pool:
        return pool.submit(asyncio.run, _all_clients(host, port, key, specs, job_id)).result()
