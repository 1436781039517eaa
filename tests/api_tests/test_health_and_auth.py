"""Health checks, API keys (401, ownership as 404), and an API process without torch."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx

from ppo_platform.jobs import JobStore


def test_a_method_a_path_does_not_have_is_405_naming_the_ones_it_has(server, alice) -> None:
    with server.client(None) as anonymous:
        trace = anonymous.request("TRACE", "/healthz")
    assert trace.status_code == 405 and trace.headers["Allow"] == "GET"
    both = alice.request("OPTIONS", "/v1/experiments")
    assert both.status_code == 405 and both.headers["Allow"] == "GET, POST"
    assert both.json()["type"] == "MethodNotAllowed"
    cancel = alice.delete(f"/v1/experiments/{'0' * 32}/cancel")
    assert cancel.status_code == 405 and cancel.headers["Allow"] == "POST"


def test_health_checks_need_no_key(server) -> None:
    with server.client(None) as anonymous:
        assert anonymous.get("/healthz").json() == {"status": "ok"}
        ready = anonymous.get("/readyz")
        deadline = time.monotonic() + 30  # 503 while the job service opens after start-up
        while ready.status_code == 503 and time.monotonic() < deadline:
            assert ready.json()["status"] == "unavailable"
            time.sleep(0.05)
            ready = anonymous.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {
        "status": "ready",
        "job_store": True,
        "tracking_store": True,
        "dispatcher": True,
        "stores": {"job_store": True, "tracking_store": True, "optuna_store": True},
    }


def test_every_other_route_needs_a_known_key(server) -> None:
    with server.client(None) as anonymous:
        missing = anonymous.get("/v1/experiments")
        wrong = anonymous.get("/v1/experiments", headers={"Authorization": "Bearer nope"})
    assert missing.status_code == wrong.status_code == 401
    assert missing.headers["WWW-Authenticate"] == "Bearer"
    assert missing.json()["type"] == "Unauthorized"
    assert wrong.json()["message"] == "unknown or revoked API key."


def test_another_keys_experiment_is_not_found_for_every_route(alice, bob, tiny, post_spec):
    job_id = post_spec(alice, tiny(name="private")).json()["id"]
    for method, path in [
        ("GET", ""),
        ("GET", "/events"),
        ("GET", "/alerts"),
        ("GET", "/artifacts"),
        ("GET", "/artifacts/resolved_spec.yaml"),
        ("GET", "/metrics"),
        ("GET", "/metrics/history?key=eval/mean_reward"),
        ("POST", "/cancel"),
    ]:
        response = bob.request(method, f"/v1/experiments/{job_id}{path}")
        assert response.status_code == 404, (path, response.text)
        assert response.json()["type"] == "NotFoundError"
    assert job_id not in bob.get("/v1/experiments").text
    assert alice.get(f"/v1/experiments/{job_id}").status_code == 200


def test_keys_made_by_the_cli_work_until_revoked(server) -> None:
    env = {**os.environ, "PPO_PLATFORM_HOME": str(server.home)}
    cli = [sys.executable, "-m", "ppo_platform.cli", "keys"]
    made = subprocess.run([*cli, "create", "carol"], env=env, capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip()
    headers = {"Authorization": f"Bearer {key}"}
    assert httpx.get(f"{server.url}/v1/experiments", headers=headers).status_code == 200
    listed = subprocess.run([*cli, "list"], env=env, capture_output=True, text=True)
    assert "carol" in listed.stdout and key not in listed.stdout
    again = subprocess.run([*cli, "create", "carol"], env=env, capture_output=True, text=True)
    assert again.returncode == 2 and "exists already" in again.stderr
    subprocess.run([*cli, "revoke", "carol"], env=env, check=True, capture_output=True)
    revoked = time.monotonic()  # revoked by another process: refused within the key cache's TTL
    while httpx.get(f"{server.url}/v1/experiments", headers=headers).status_code != 401:
        assert time.monotonic() - revoked < 5.0 + 1.0, "still accepted after the cache TTL (5 s)"
        time.sleep(0.1)
    store = JobStore(f"sqlite:///{server.home / 'jobs.db'}", server.home)
    with store.read() as session:
        from sqlalchemy import text

        hashes = session.execute(text("SELECT key_hash FROM api_keys")).scalars().all()
    store.close()
    assert key not in hashes


def test_the_api_process_imports_no_torch_or_sb3(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import sys
        from fastapi.testclient import TestClient
        from ppo_platform.api.app import create_app

        with TestClient(create_app()) as client:
            assert client.get("/healthz").status_code == 200
            ok = client.post(
                "/v1/specs/validate",
                content="name: x\\nenv: CartPole-v1\\n",
                headers={"Authorization": "Bearer k", "Content-Type": "application/yaml"},
            )
            assert ok.status_code == 200, ok.text
            grid = "name: g\\nenv: {id: ppo_platform/GridWorld-v0, n_envs: 1}\\n"
            queued = client.post(
                "/v1/experiments",
                content=grid + "rollout: {n_steps: 64}\\nbudget: {total_timesteps: 256}\\n",
                headers={"Authorization": "Bearer k", "Content-Type": "application/yaml"},
            )
            assert queued.status_code == 202, queued.text
        heavy = [m for m in ("torch", "stable_baselines3", "mlflow", "optuna") if m in sys.modules]
        print(heavy)
        """
    )
    root = Path(__file__).resolve().parents[2]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root / "platform"), str(root)]),
        "PPO_PLATFORM_HOME": str(tmp_path),
        "PPO_PLATFORM_API_KEYS": '{"a": "k"}',
    }
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
