"""Services a benchmark starts for itself: a Ray cluster of one-CPU nodes on this machine."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

READY_LINE = "will now block forever"  # what `ray start --block` prints once the node is up


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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
