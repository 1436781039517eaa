"""A two-worker study on a PostgreSQL storage: a throwaway server in a temp dir, a free port.

Skipped (with the reason) when the PostgreSQL server binaries or psycopg are missing.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from ppo_platform.settings import Settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.tuning import run_study
from ppo_platform.tuning.study import open_storage

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def as_server_user(command: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: run it as the `postgres` user then."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    if shutil.which("initdb") is None or shutil.which("pg_ctl") is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) are not on PATH")
    pytest.importorskip(
        "psycopg",
        reason="psycopg (psycopg[binary]), SQLAlchemy's PostgreSQL driver, is not installed",
    )
    root = Path(tempfile.mkdtemp(prefix="ppo-pg-"))
    if os.geteuid() == 0:
        try:
            server_user = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no `postgres` user to run the server")
        os.chown(root, server_user.pw_uid, server_user.pw_gid)
    data, port = root / "data", free_port()
    try:
        subprocess.run(
            as_server_user(
                ["initdb", "-D", str(data), "-U", "tuner", "--auth=trust", "-E", "UTF8"]
            ),
            check=True,
            capture_output=True,
        )
        subprocess.run(
            as_server_user(
                [
                    "pg_ctl",
                    "-D",
                    str(data),
                    "-l",
                    str(root / "server.log"),
                    "-w",
                    "-t",
                    "60",
                    "-o",
                    f"-p {port} -k {root} -c listen_addresses=127.0.0.1",
                    "start",
                ]
            ),
            check=True,
            capture_output=True,
        )
        yield f"postgresql://tuner@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            as_server_user(["pg_ctl", "-D", str(data), "-m", "immediate", "stop"]),
            capture_output=True,
        )
        shutil.rmtree(root, ignore_errors=True)


def test_two_workers_share_a_postgresql_study(
    home: Settings, postgres_url: str, tiny_spec: Callable[..., ExperimentSpec], tmp_path: Path
) -> None:
    result = run_study(
        tiny_spec(**{"tune.n_trials": 4}),
        workers=2,
        storage=postgres_url,
        study_name="pg",
        out_dir=tmp_path / "out",
        live=False,
    )
    study = optuna.load_study(study_name="pg", storage=open_storage(postgres_url))
    trials = study.get_trials()
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 4
    assert len({t.user_attrs["pid"] for t in trials}) == 2
    assert result.storage == postgres_url  # no password in this URL: nothing to redact
    assert result.outputs.best_spec.exists()
