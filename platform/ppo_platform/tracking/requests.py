"""Requests to this process's tracking process about no run it has open: create the store,
find runs, close a run a dead process left RUNNING, read a sweep back, attach files to a run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ppo_platform.errors import RunNotFoundError
from ppo_platform.settings import get_settings
from ppo_platform.tracking.remote import shared_tracking_process


def _ask(op: str, uri: str | None = None, **fields: Any) -> dict[str, Any]:
    """One request of this process's tracking process that is about no open run; its answer."""
    process = shared_tracking_process()
    uri = uri or get_settings().tracking_uri
    return process.wait(process.request(op, awaited=True, uri=uri, **fields))


def ensure_store(lock: Path, uri: str | None = None) -> None:
    """Create the tracking store now, under the file lock `lock` (see the service's `store`)."""
    _ask("store", uri, lock=str(lock))


def find_runs(
    experiment: str,
    tags: dict[str, str],
    *,
    parent: str | None = None,
    uri: str | None = None,
) -> list[dict[str, Any]]:
    """The runs of `experiment` (children of `parent`, if given) carrying every tag in `tags`,
    oldest first: dicts with run_id, status, start_time and tags."""
    return list(_ask("find", uri, experiment=experiment, tags=tags, parent=parent)["runs"])


def terminate_run(
    run_id: str,
    status: str,
    tags: dict[str, str] | None = None,
    *,
    only_running: bool = False,
    uri: str | None = None,
) -> bool:
    """Close `run_id` (not open in this process) with `status`; with `only_running` a run
    already closed is left alone. Whether it was closed here."""
    reply = _ask(
        "terminate", uri, run_id=run_id, status=status, tags=tags or {}, only_running=only_running
    )
    return bool(reply["closed"])


def read_sweep(parent_run_id: str, keys: tuple[str, ...], uri: str | None = None) -> dict[str, Any]:
    """A sweep's parent and member runs as plain data (`tracking.reads.sweep_runs`), read by
    the tracking process; RunNotFoundError if `parent_run_id` is no sweep's parent run."""
    reply = _ask("read_sweep", uri, run_id=parent_run_id, keys=list(keys))
    if "not_found" in reply:
        raise RunNotFoundError(reply["not_found"])
    return dict(reply["sweep"])


def attach_artifacts(run_id: str, paths: list[Path], folder: str, uri: str | None = None) -> None:
    """Log `paths` as artifacts of `run_id` under `folder` (a run not open in this process)."""
    _ask("attach", uri, run_id=run_id, paths=[str(path) for path in paths], folder=folder)
