"""Services a benchmark starts for itself: the REST API server of a source tree, a Ray cluster
of one-CPU nodes on this machine."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

READY_LINE = "will now block forever"  # what `ray start --block` prints once the node is up
API_KEY = "bench-key-0123456789"  # the API server's one key (`api_server`)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _at_nice_zero() -> None:
    """In the child before exec: nice 0 whatever the parent's (lowering it needs root)."""
    with contextlib.suppress(PermissionError):
        os.setpriority(os.PRIO_PROCESS, 0, 0)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=0.5) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def api_server(
    home: Path, tree: Path, extra: dict[str, str] | None = None, timeout_s: float = 120.0
) -> tuple[subprocess.Popen[bytes], str, float, float]:
    """`python -m ppo_platform.cli serve` of `tree` (at nice 0, as a user starts it) on a free
    loopback port over `home`, one API key (`API_KEY`) whose rate limits and queues do not cap
    a benchmark: the process, its URL, and the seconds from its start until /healthz and
    /readyz answered 200. The caller stops it."""
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tree / "platform"), str(tree)]),
        "PPO_PLATFORM_HOME": str(home),
        "PPO_PLATFORM_API_KEYS": json.dumps({"bench": API_KEY}),
        "PPO_PLATFORM_MAX_RUNNING": "1",
        "PPO_PLATFORM_MAX_QUEUED": "100000",
        "PPO_PLATFORM_KEY_REQUESTS_PER_SECOND": "1000000",
        "PPO_PLATFORM_KEY_REQUEST_BURST": "1000000",
        "PPO_PLATFORM_INTAKE_QUEUE": "100000",
        **(extra or {}),
    }
    url = f"http://127.0.0.1:{port}"
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "ppo_platform.cli", "serve", "--port", str(port)],
        env=env,
        cwd=tree,  # `python -m` puts the working directory first on sys.path
        stdout=subprocess.DEVNULL,
        stderr=(home / "server.log").open("wb"),
        preexec_fn=_at_nice_zero,
    )
    times = []
    for route in ("/healthz", "/readyz"):
        while not _answers(f"{url}{route}"):
            if process.poll() is not None or time.perf_counter() - started > timeout_s:
                process.kill()
                raise RuntimeError(f"the API server did not answer {route}: {home}/server.log")
            time.sleep(0.01)
        times.append(time.perf_counter() - started)
    return process, url, times[0], times[1]


def _ray() -> str:
    found = Path(sys.executable).parent / "ray"
    return str(found) if found.exists() else (shutil.which("ray") or "ray")


@contextmanager
def _node(command: list[str], log: Path) -> Iterator[None]:
    """One `ray start --block` in its own process group, up within 120 s, stopped at the end."""
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}  # loopback only: no token auth
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env
        )
    try:
        deadline = time.monotonic() + 120
        while READY_LINE not in log.read_text(errors="replace"):
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError(f"ray node did not come up: {log.read_text()[-2000:]}")
            time.sleep(0.5)
        yield
    finally:
        for signum, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(process.pid, signum)
                process.wait(wait)
                break
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue


@contextmanager
def ray_cluster(nodes: int = 2) -> Iterator[str]:
    """A Ray cluster of `nodes` one-CPU nodes on this machine; its address host:port."""
    root = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    port = free_port()
    common = ["--block", "--num-cpus=1", "--disable-usage-stats"]
    head = [_ray(), "start", "--head", f"--port={port}", f"--temp-dir={root}"]
    try:
        with ExitStack() as stack:
            for index in range(nodes):
                command = (
                    [*head, "--include-dashboard=false", *common]
                    if index == 0
                    else [_ray(), "start", f"--address=127.0.0.1:{port}", *common]
                )
                stack.enter_context(_node(command, root / f"node{index}.log"))
            yield f"127.0.0.1:{port}"
    finally:
        shutil.rmtree(root, ignore_errors=True)
