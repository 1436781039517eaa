"""A throwaway PostgreSQL server for tests: initdb in a temp dir, a free loopback port.

`throwaway_postgres(user)` yields `postgresql://USER@127.0.0.1:PORT/postgres` (trust auth, no
password) and stops the server and removes its files on exit. It skips the test (with the
reason) when the server binaries (initdb, pg_ctl) or psycopg are missing, or when running as
root without a `postgres` user to run the server as.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

# initdb as the server user, also where /dev/null is not writable by it (see the script).
INITDB = Path(__file__).resolve().parent / "initdb.sh"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def as_server_user(command: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: run it as the `postgres` user then."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def _skip_unless_available() -> None:
    if shutil.which("initdb") is None or shutil.which("pg_ctl") is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) are not on PATH")
    pytest.importorskip(
        "psycopg",
        reason="psycopg (psycopg[binary]), SQLAlchemy's PostgreSQL driver, is not installed",
    )


def _hand_to_server_user(root: Path) -> None:
    if os.geteuid() != 0:
        return
    try:
        server_user = pwd.getpwnam("postgres")
    except KeyError:
        pytest.skip("running as root and there is no `postgres` user to run the server")
    os.chown(root, server_user.pw_uid, server_user.pw_gid)


def _run_or_say(command: list[str], what: str) -> None:
    """Run a server step; when it fails, the error carries what the step printed."""
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{what} exited {done.returncode}: {done.stdout}{done.stderr}")


@contextmanager
def throwaway_postgres(user: str = "tester") -> Iterator[str]:
    """A running PostgreSQL server for the duration of the block; its URL (database postgres)."""
    _skip_unless_available()
    root = Path(tempfile.mkdtemp(prefix="ppo-pg-"))
    _hand_to_server_user(root)
    data, port = root / "data", free_port()
    options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1"
    log = str(root / "server.log")
    try:
        _run_or_say(
            [str(INITDB), "-D", str(data), "-U", user, "--auth=trust", "-E", "UTF8"], "initdb"
        )
        _run_or_say(
            as_server_user(
                ["pg_ctl", "-D", str(data), "-l", log, "-w", "-t", "60", "-o", options, "start"]
            ),
            "pg_ctl start",
        )
        yield f"postgresql://{user}@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            as_server_user(["pg_ctl", "-D", str(data), "-m", "immediate", "stop"]),
            capture_output=True,
        )
        shutil.rmtree(root, ignore_errors=True)


def create_database(server_url: str, name: str) -> str:
    """A new empty database on the server; its psycopg (v3) SQLAlchemy URL."""
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    return server_url.replace("postgresql://", "postgresql+psycopg://").rsplit("/", 1)[0] + (
        f"/{name}"
    )
