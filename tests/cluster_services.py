"""The services of a multi-node deployment for tests: a Ray cluster and an MLflow server.

CI starts them once (`.ci/services.sh start`) and exports their addresses (PPO_TEST_RAY_ADDRESS,
PPO_TEST_MLFLOW_URI, PPO_TEST_POSTGRES_URL) with PPO_TEST_REQUIRE_SERVICES=1: then a service
that is missing fails the test instead of skipping it. Without those variables the fixtures
start their own (a two-node Ray cluster on this machine, an MLflow server on PostgreSQL) and
stop them by process group at the end.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from postgres_server import free_port

# Loopback test clusters run without Ray token auth (a stray ~/.ray/auth_token would turn it
# on for the head only and lock the second node out).
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

READY_LINE = "will now block forever"


@dataclass(frozen=True)
class Cluster:
    home: Path
    ray_address: str
    mlflow_uri: str
    jobs_url: str
    optuna_url: str

    def env(self) -> dict[str, str]:
        """The settings a process (API server, CLI) needs to use the cluster."""
        return {
            "PPO_PLATFORM_HOME": str(self.home),
            "PPO_PLATFORM_EXECUTOR": "ray",
            "PPO_PLATFORM_RAY_ADDRESS": self.ray_address,
            "MLFLOW_TRACKING_URI": self.mlflow_uri,
            "PPO_PLATFORM_JOBS_DATABASE_URL": self.jobs_url,
            "PPO_PLATFORM_OPTUNA_STORAGE_URL": self.optuna_url,
        }


def required() -> bool:
    """CI: every cluster test must run; a missing service is a failure, not a skip."""
    return os.environ.get("PPO_TEST_REQUIRE_SERVICES") == "1"


def skip_or_fail(reason: str) -> None:
    if required():
        pytest.fail(f"PPO_TEST_REQUIRE_SERVICES=1 but {reason}")
    pytest.skip(reason)


def _bin(name: str) -> str:
    found = Path(sys.executable).parent / name
    return str(found) if found.exists() else (shutil.which(name) or name)


def _wait(check: object, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if check():  # type: ignore[operator]
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"{what} did not come up within {seconds:.0f} s")


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group this fixture started; SIGKILL what is left after 10 s."""
    for signum, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, signum)
        except ProcessLookupError:
            return
        try:
            process.wait(wait)
            time.sleep(0.5)  # the group's other members leave with their leader
        except subprocess.TimeoutExpired:
            continue


@contextmanager
def _group(
    command: list[str], log: Path, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env
        )
    try:
        yield process
    finally:
        _stop_group(process)


# The test env package is importable on every node, as an operator installs env packages on
# every node of a real cluster (.ci/services.sh does the same for CI's cluster).
ENV_PACKAGES_DIR = Path(__file__).resolve().parent / "fixtures" / "env_packages"


def _node_env() -> dict[str, str]:
    current = os.environ.get("PYTHONPATH")
    path = os.pathsep.join([str(ENV_PACKAGES_DIR), *([current] if current else [])])
    return {**os.environ, "PYTHONPATH": path}


@contextmanager
def ray_cluster(nodes: int = 2) -> Iterator[str]:
    """A Ray cluster of `nodes` one-CPU nodes on this machine (the others than the head with one
    logical GPU); its address host:port."""
    root = Path(tempfile.mkdtemp(prefix="ppo-ray-"))
    port = free_port()
    common = ["--block", "--num-cpus=1", "--disable-usage-stats"]
    head = [_bin("ray"), "start", "--head", f"--port={port}", f"--temp-dir={root}"]
    head += ["--include-dashboard=false", *common]
    try:
        with ExitStack() as stack:
            for index in range(nodes):
                command = (
                    head
                    if index == 0
                    # One logical GPU (as .ci/services.sh): a task needing one goes there.
                    else [
                        _bin("ray"),
                        "start",
                        f"--address=127.0.0.1:{port}",
                        *common,
                        "--num-gpus=1",
                    ]
                )
                log = root / f"node{index}.log"
                stack.enter_context(_group(command, log, _node_env()))
                _wait(lambda log=log: READY_LINE in log.read_text(), 120, f"ray node {index}")
            yield f"127.0.0.1:{port}"
    finally:
        shutil.rmtree(root, ignore_errors=True)


def mlflow_health(uri: str) -> bool:
    with urllib.request.urlopen(f"{uri}/health", timeout=2) as response:
        return response.status == 200


@contextmanager
def mlflow_server(backend_url: str) -> Iterator[str]:
    """An MLflow tracking server on `backend_url` with a temporary artifact folder; its URI."""
    root = Path(tempfile.mkdtemp(prefix="ppo-mlflow-"))
    port = free_port()
    command = [
        _bin("mlflow"),
        "server",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
        "--backend-store-uri",
        backend_url,
        "--artifacts-destination",
        str(root / "artifacts"),
    ]
    try:
        with _group(command, root / "server.log"):
            uri = f"http://127.0.0.1:{port}"
            _wait(lambda: mlflow_health(uri), 180, "the MLflow server")
            yield uri
    finally:
        shutil.rmtree(root, ignore_errors=True)
