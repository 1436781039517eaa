"""A Ray worker whose node died stops at once, with its whole process group: its raylet (the
parent that started it) exiting is seen by the reparenting, reaped or not, and a dead raylet
left as an unreaped zombie (which Ray's own kill(pid, 0) check takes for alive) is dead too."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ppo_platform.execution.ray_executor import raylet_alive

# Plays the node: starts the "worker" (its own process group, as a job's worker) and waits.
NODE = """
import subprocess, sys, time
worker = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]])
print(worker.pid, flush=True)
time.sleep(600)
"""
# Plays a job's worker: watches its node, and writes to its run every 50 ms.
WORKER = """
import os, sys, time
from pathlib import Path
os.setpgid(0, 0)
from ppo_platform.execution.ray_executor import watch_node
watch_node(own_group=True)
beats = Path(sys.argv[1])
while True:
    beats.write_text(str(time.time()))
    time.sleep(0.05)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return raylet_alive(pid)


def test_a_zombie_is_not_alive_and_a_running_process_is() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    time.sleep(0.5)  # exited, not reaped yet: a zombie
    try:
        assert not raylet_alive(child.pid)
        assert raylet_alive(os.getpid())
    finally:
        child.wait()
    assert not raylet_alive(child.pid)


def test_a_worker_stops_writing_when_its_node_dies(tmp_path: Path) -> None:
    beats = tmp_path / "beats"
    node = subprocess.Popen(
        [sys.executable, "-c", NODE, WORKER, str(beats)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert node.stdout is not None
    worker = int(node.stdout.readline())
    deadline = time.monotonic() + 60
    while not beats.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert beats.exists() and _alive(worker)
    os.killpg(node.pid, signal.SIGKILL)  # the node's group: the worker leads its own
    killed_at = time.time()
    node.wait()
    deadline = time.monotonic() + 10
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(worker), "the worker outlived its node"
    assert float(beats.read_text()) < killed_at + 1.0  # nothing written after its node died
