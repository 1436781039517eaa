"""A real uvicorn server on a loopback port, in its own process, with its own stores."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
KEYS = {"alice": "key-alice-0123456789", "bob": "key-bob-0123456789"}
TERMINAL = {"succeeded", "failed", "cancelled"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def tiny_spec(steps: int = 512, name: str = "tiny", every: int = 128) -> str:
    """A GridWorld run that trains `steps` env steps, checkpoints every `every`."""
    return (
        f"name: {name}\nenv: {{id: ppo_platform/GridWorld-v0, n_envs: 1}}\n"
        "rollout: {n_steps: 64}\nupdate: {epochs: 2, minibatch_size: 64}\n"
        f"budget: {{total_timesteps: {steps}}}\n"
        f"evaluation: {{every_timesteps: {max(every, 256)}, episodes: 2}}\n"
        f"checkpoints: {{every_timesteps: {every}}}\n"
    )


@dataclass
class Server:
    """One `ppo-platform serve` process; restartable on the same home and port."""

    home: Path
    port: int
    env_extra: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    startup_seconds: float = 0.0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, wait_ready: bool = True) -> None:
        inherited = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
        env = {
            **inherited,
            "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "platform"), str(REPO_ROOT)]),
            "PPO_PLATFORM_HOME": str(self.home),
            "PPO_PLATFORM_API_KEYS": json.dumps(KEYS),
            "PPO_PLATFORM_JOBS_CONCURRENCY": "2",
            "PPO_PLATFORM_MAX_RUNNING": "1",
            # Tests send requests faster than any person: the per-key write rate is tested
            # with its own settings (security_tests/test_key_limits.py).
            "PPO_PLATFORM_KEY_REQUESTS_PER_SECOND": "1000",
            "PPO_PLATFORM_KEY_REQUEST_BURST": "1000",
            **self.env_extra,
        }
        for name in [k for k, v in self.env_extra.items() if v == ""]:
            env.pop(name)  # an empty extra unsets the variable: the setting's default applies
        log = (self.home / "server.log").open("ab")
        started = time.monotonic()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "ppo_platform.cli", "serve", "--port", str(self.port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self._wait_for("/healthz", started + 60)
        self.startup_seconds = time.monotonic() - started
        # The job service opens after the server listens (migrations, intake workers): a test
        # starts once it is ready, as a client that watches /readyz would.
        if wait_ready:
            self._wait_for("/readyz", started + 120)

    def _wait_for(self, route: str, deadline: float) -> None:
        assert self.process is not None
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}{route}", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert self.process.poll() is None, (self.home / "server.log").read_text()
            time.sleep(0.1)
        self.kill()  # a server that never became ready is not left running after the test
        raise AssertionError(f"the server did not answer {route} within its deadline")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            self.process.wait(30)

    def client(self, owner: str | None = "alice") -> httpx.Client:
        headers = {"Authorization": f"Bearer {KEYS[owner]}"} if owner else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)


def start_server(tmp: Path, **env: str) -> Server:
    home = tmp / "home"
    home.mkdir(parents=True, exist_ok=True)
    server = Server(home, free_port(), env)
    server.start()
    return server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = start_server(tmp_path_factory.mktemp("api"))
    yield running
    running.kill(signal.SIGTERM)


@pytest.fixture
def fresh_server(tmp_path: Path) -> Iterator[Server]:
    running = start_server(tmp_path)
    yield running
    running.kill(signal.SIGTERM)


@pytest.fixture
def alice(server: Server) -> Iterator[httpx.Client]:
    with server.client("alice") as client:
        yield client


@pytest.fixture
def bob(server: Server) -> Iterator[httpx.Client]:
    with server.client("bob") as client:
        yield client


def wait_for(
    client: httpx.Client,
    job_id: str,
    done: Callable[[dict[str, Any]], bool] = lambda job: job["status"] in TERMINAL,
    timeout: float = 120,
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = client.get(f"/v1/experiments/{job_id}").json()
        if done(job):
            return job
        time.sleep(0.25)
    raise AssertionError(f"{job_id} not there after {timeout} s: {job}")


def submit(client: httpx.Client, text: str, **headers: str) -> httpx.Response:
    return client.post(
        "/v1/experiments",
        content=text,
        headers={"Content-Type": "application/yaml", **headers},
    )


@pytest.fixture
def tiny() -> Callable[..., str]:
    return tiny_spec


@pytest.fixture
def wait() -> Callable[..., dict[str, Any]]:
    return wait_for


@pytest.fixture
def post_spec() -> Callable[..., httpx.Response]:
    return submit


@pytest.fixture
def keys() -> dict[str, str]:
    """The API keys every test server knows, by owner."""
    return KEYS


@pytest.fixture
def server_factory() -> Callable[..., Server]:
    """start_server(tmp, **env): a server with extra settings; the test stops it."""
    return start_server
