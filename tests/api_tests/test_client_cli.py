"""`ppo-platform submit | status | cancel` through the CLI's typed HTTP client, against the
server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _cli(server, key: str, *args: str) -> subprocess.CompletedProcess[str]:
    root = Path(__file__).resolve().parents[2]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root / "platform"), str(root)]),
        "PPO_PLATFORM_API_KEY": key,
    }
    return subprocess.run(
        [sys.executable, "-m", "ppo_platform.cli", *args, "--server", server.url],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_submit_follows_to_the_end_and_status_cancel_work(server, tiny, tmp_path, keys) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(tiny(512, name="via-cli"))
    followed = _cli(server, keys["bob"], "submit", str(spec))
    assert followed.returncode == 0, followed.stderr
    lines = followed.stdout.splitlines()
    assert len(lines[0]) == 32
    events, ended = [json.loads(line) for line in lines[1:-1]], json.loads(lines[-1])
    assert ended["status"] == "succeeded" and ended["result"]["run_id"] == ended["mlflow_run_id"]
    assert any(event["kind"] == "eval" for event in events)
    assert all(isinstance(event["id"], int) and "data" in event for event in events)
    resolved = json.loads(_cli(server, keys["bob"], "status", lines[0]).stdout)["resolved"]
    assert resolved["device"] == "cpu" and resolved["vectorization"] in ("dummy", "native")

    spec.write_text(tiny(400_000, name="via-cli-long"))
    detached = _cli(
        server,
        keys["bob"],
        "submit",
        str(spec),
        "--detach",
        "--set",
        "name=via-cli-set",
        "--set",
        "update.epochs=3",
    )
    job_id = detached.stdout.strip()
    assert detached.returncode == 0 and len(job_id) == 32, detached.stderr
    status = _cli(server, keys["bob"], "status", job_id)
    shown = json.loads(status.stdout)
    assert shown["name"] == "via-cli-set" and shown["created_at"].endswith("+00:00")
    refused = _cli(server, keys["bob"], "submit", str(spec), "--set", "update.epochs=31")
    assert refused.returncode == 2 and "update.epochs" in refused.stderr
    assert "K = 31 epochs" in refused.stderr
    cancelled = _cli(server, keys["bob"], "cancel", job_id)
    assert cancelled.returncode == 0 and "cancel" in cancelled.stdout
    other = _cli(server, keys["alice"], "status", job_id)
    assert other.returncode == 2 and "HTTP 404" in other.stderr
    wrong = _cli(server, "not-a-key", "status", job_id)
    assert wrong.returncode == 2 and "HTTP 401" in wrong.stderr
