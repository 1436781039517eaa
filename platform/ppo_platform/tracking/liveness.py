"""Which process owns a RUNNING run, and marking runs whose process is gone as KILLED.

Every run the platform creates or reopens records its process as `host:pid:start` (the start
time from /proc, so a reused pid is not mistaken for the owner). A run killed by SIGKILL or the
OOM killer cannot close itself; the next `run`, `sweep` or `tune` on this platform home finds
it RUNNING with its process gone and marks it KILLED with the reason. Its checkpoints stay, so
`--resume` continues it.
"""

from __future__ import annotations

import os
import socket
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from ppo_platform.tracking import tags as tag
from ppo_platform.tracking.gateway import SQLITE_PREFIX, retry, tracking_client

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

ORPHAN_REASON = "its process {owner} is gone (killed by a signal, the OOM killer or a crash)"


def process_start(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux), None if it does not exist."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            stat = handle.read()
    except OSError:
        return None
    return stat.rpartition(")")[2].split()[19]  # field 22; the name in () may hold spaces


def this_process() -> str:
    """`host:pid:start` of this process: the value of the owner tag."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{process_start(pid) or '?'}"


def owner_tags() -> dict[str, str]:
    return {tag.PROCESS: this_process()}


def claim_run(client: MlflowClient, run_id: str) -> None:
    """Record this process as the owner of `run_id` (a run just created or reopened)."""
    retry(partial(client.set_tag, run_id, tag.PROCESS, this_process()))


def owner_is_gone(owner: str) -> bool:
    """True if `owner` ran on this host and that process no longer exists (or is another
    process with the same pid). Owners on other hosts are never judged."""
    host, _, rest = owner.partition(":")
    pid_text, _, start = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    current = process_start(int(pid_text))
    if current is None:
        return True
    return start not in ("?", current)


def reap_orphaned_runs(client: MlflowClient) -> list[str]:
    """Mark KILLED every RUNNING run of this store whose owner process is gone; their ids."""
    experiments = retry(lambda: client.search_experiments())
    ids = [experiment.experiment_id for experiment in experiments]
    if not ids:
        return []
    running = retry(
        lambda: client.search_runs(ids, "attributes.status = 'RUNNING'", max_results=1000)
    )
    reaped = []
    for run in running:
        owner = run.data.tags.get(tag.PROCESS)
        if owner is None or not owner_is_gone(owner):
            continue
        reason = ORPHAN_REASON.format(owner=owner)
        retry(partial(client.set_tag, run.info.run_id, tag.FAILURE, reason))
        retry(partial(client.set_tag, run.info.run_id, tag.OUTCOME, "killed"))
        retry(partial(client.set_terminated, run.info.run_id, "KILLED"))
        reaped.append(run.info.run_id)
    return reaped


def reap_orphans_in(tracking_uri: str) -> list[str]:
    """`reap_orphaned_runs` on the store at `tracking_uri` (a SQLite file not yet created has
    no runs: it is not created here)."""
    database = Path(tracking_uri.removeprefix(SQLITE_PREFIX))
    if tracking_uri.startswith(SQLITE_PREFIX) and not database.exists():
        return []
    return reap_orphaned_runs(tracking_client(tracking_uri))
