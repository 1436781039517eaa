"""An env's own exception (a thermostat's valve jams) ends the run with a short answer: env id,
the run's env steps, the env's exception type and message, where the full traceback was saved;
exit 1 (a training failure in the errors table); MLflow keeps the exception's type and message
as separate tags. The same for in-process (dummy) and subprocess vector envs."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from env_package_fixtures import LOCAL_FAULTY_ENV, LOCAL_MODULE

from ppo_platform.errors import EXIT_FAILED, EnvCrashError, exit_code, http_status
from ppo_platform.execution.base import describe_error

pytestmark = pytest.mark.usefixtures("own_envs_importable")

SPEC = """name: valve
env: {{id: {env}, n_envs: 2, vectorization: {mode}, kwargs: {{jam_at: 21}}}}
rollout: {{n_steps: 16}}
update: {{epochs: 1, minibatch_size: 32}}
budget: {{total_timesteps: 256}}
evaluation: {{every_timesteps: 0, episodes: 1}}
checkpoints: {{every_timesteps: 0}}
"""


def _tags(home: Path) -> dict[str, str]:
    import mlflow

    client = mlflow.MlflowClient(f"sqlite:///{home / 'mlflow.db'}")
    [run] = client.search_runs(client.search_experiments()[0].experiment_id.split())
    return {**run.data.tags, "status": run.info.status}


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["dummy", "subproc"])
def test_the_envs_exception_is_the_runs_answer(tmp_path: Path, mode: str) -> None:
    spec = tmp_path / "valve.yaml"
    spec.write_text(SPEC.format(env=LOCAL_FAULTY_ENV, mode=mode))
    home = tmp_path / "home"
    done = subprocess.run(
        [sys.executable, "-m", "ppo_platform.cli", "run", str(spec), "--env-package", LOCAL_MODULE],
        env={**os.environ, "PPO_PLATFORM_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == EXIT_FAILED, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[-2:] == [
        f"{LOCAL_FAULTY_ENV} (env 0) raised ValveJammed after 40 env steps: "
        "valve 7 stuck half-open after 21 steps",
        f"full traceback: {lines[-1].split(': ', 1)[1]}",
    ], done.stderr
    assert "Traceback" not in done.stderr and "EOFError" not in done.stderr
    saved = Path(lines[-1].split(": ", 1)[1])
    assert saved.parent.parent == home / "runs"
    assert "raise ValveJammed(" in saved.read_text()
    tags = _tags(home)
    assert tags["status"] == "FAILED"
    assert tags["ppo_platform.failure"] == "ValveJammed: valve 7 stuck half-open after 21 steps"
    assert tags["ppo_platform.failure.kind"] == "env_crash"
    assert tags["ppo_platform.failure.exception_type"] == "ppo_test_local_envs.ValveJammed"
    assert (
        tags["ppo_platform.failure.exception_message"] == "valve 7 stuck half-open after 21 steps"
    )
    assert tags["ppo_platform.failure.env_id"] == LOCAL_FAULTY_ENV
    assert tags["ppo_platform.failure.step"] == "40"


def test_the_error_crosses_processes_as_its_fields_and_maps_to_exit_1() -> None:
    error = EnvCrashError(
        "Pump-v3", "pumps.Cavitation", "inlet pressure 0.2 bar", step=96, env_index=3
    )
    copy = pickle.loads(pickle.dumps(error))
    assert copy.fields() == error.fields()
    assert (
        str(copy) == "Pump-v3 (env 3) raised Cavitation after 96 env steps: inlet pressure 0.2 bar"
    )
    assert describe_error(copy) == (
        "Cavitation: inlet pressure 0.2 bar (raised by Pump-v3 after 96 env steps)"
    )
    assert (exit_code(error), http_status(error)) == (1, 500)
