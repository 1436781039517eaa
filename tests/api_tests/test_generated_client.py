"""A client generated from the live /openapi.json by openapi-python-client, as a new user would
make one: the generator warns about nothing, and the client validates, submits a typed spec as
JSON, follows it, reads its metrics and cancels it, with a generated model for every answer.

The generator is pinned and lives in a venv of its own under the cache folder (made on first
use, like the zoo benchmark's), never in the project's dependencies.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
GENERATOR = "openapi-python-client==0.29.1"
DRIVER = Path(__file__).parent / "generated_client" / "drive.py"


def generator_venv() -> Path:
    """The generator's venv, made once per cache folder (pip needs PyPI the first time)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    venv = cache / "ppo-platform" / GENERATOR.replace("==", "-")
    if not (venv / ".installed").exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
        subprocess.run([*pip, GENERATOR], check=True, timeout=900)
        (venv / ".installed").touch()
    return venv


@pytest.fixture
def clientgen_server(server_factory, tmp_path):
    # Metrics reach MLflow every second (not every 10 s), so the client reads some soon.
    running = server_factory(tmp_path / "server", PPO_PLATFORM_METRICS_FLUSH_SECONDS="1")
    yield running
    running.kill(signal.SIGTERM)


def test_a_generated_client_submits_follows_and_cancels_with_typed_models(
    clientgen_server, keys, tmp_path
) -> None:
    venv = generator_venv()
    bin_dir = venv / "bin"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)
    generated = subprocess.run(
        [
            str(bin_dir / "openapi-python-client"),
            "generate",
            "--url",
            f"{clientgen_server.url}/openapi.json",
            "--output-path",
            str(tmp_path / "client" / "ppo_platform_client"),
            "--meta",
            "none",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    printed = generated.stdout + generated.stderr
    assert generated.returncode == 0, printed
    assert "Warning" not in printed and "WARNING" not in printed, printed

    driven = subprocess.run(
        [str(bin_dir / "python"), str(DRIVER), clientgen_server.url, keys["alice"]],
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(tmp_path / "client")},
        timeout=600,
    )
    assert driven.returncode == 0, driven.stdout + driven.stderr
    found = json.loads(driven.stdout.splitlines()[-1])
    assert found["validated_name"] == "generated-client" and found["validated_kind"] == "run"
    assert found["submitted_status"] == "queued" and found["running_status"] == "running"
    assert found["timesteps"] > 0
    assert "train/approx_kl" in found["metric_keys"] and found["history_key"] == "train/approx_kl"
    assert found["history_points"] >= 1 and found["history_first_step"] > 0
    assert found["unknown_metric_type"] == "NotFoundError"
    assert found["cancel_requested"] is True and found["final_status"] == "cancelled"
    assert found["final_result_outcome"] == "cancelled"
    assert found["created_at_offsets"] == [0.0, 0.0] and found["created_at_equal"] is True
