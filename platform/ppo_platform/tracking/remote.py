"""The training process's side of the tracking process (`tracking/service.py`).

The training process never imports MLflow: it starts one tracking process (first, so that
MLflow's import overlaps torch's), hands it requests as JSON lines and goes on training. A
reader thread collects the answers; a metric row counts as stored once its answer (the
acknowledgement) has come back. `RemoteRun.finish` waits until every request is durable. If the
tracking process dies or fails a request, the next call raises `TrackingError` with the reason:
training stops rather than lose metrics silently.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ppo_platform.errors import TrackingError
from ppo_platform.settings import Settings
from ppo_platform.spec.experiment import ExperimentSpec, flatten
from ppo_platform.spec.lm import LMExperimentSpec
from ppo_platform.spec.loader import dump_spec
from ppo_platform.tracking.liveness import this_process
from ppo_platform.tracking.process import INTERRUPTED_REPLY_TIMEOUT
from ppo_platform.tracking.process import TrackingProcess as TrackingProcess
from ppo_platform.tracking.process import ack_listeners as ack_listeners
from ppo_platform.tracking.process import spawn_child as spawn_child
from ppo_platform.tracking.tracker import param_value, run_tags
from ppo_platform.tracking.writer import MetricRow

_process: TrackingProcess | None = None
_process_pid: int | None = None
_start_lock = threading.Lock()


def shared_tracking_process() -> TrackingProcess:
    """This process's tracking process, started on first use (and again if it died)."""
    global _process, _process_pid
    with _start_lock:
        if _process is None or _process_pid != os.getpid() or not _process.alive:
            _process, _process_pid = TrackingProcess(), os.getpid()
            atexit.register(_process.close)
        return _process


def start_reaping() -> Callable[[], list[str]]:
    """Start this process's tracking process and have it mark the runs of this home left
    RUNNING by a gone process KILLED, first; call the result for their ids (waits)."""
    from ppo_platform.settings import get_settings

    process = shared_tracking_process()
    seq = process.request("reap", awaited=True, uri=get_settings().tracking_uri)

    def reaped() -> list[str]:
        try:
            return list(process.wait(seq)["reaped"])
        except TrackingError:  # the run that follows reports a dead tracking process itself
            return []

    return reaped


class RemoteRun:
    """One training run as the training process sees it: metrics buffered, then handed over."""

    def __init__(
        self,
        process: TrackingProcess,
        opened: int,
        settings: Settings,
        run_dir: Path | None = None,
    ) -> None:
        self.process, self._opened = process, opened
        self.tracking_uri, self.flush_seconds = (
            settings.tracking_uri,
            settings.metrics_flush_seconds,
        )
        self._run_id: str | None = None
        self._run_dir = run_dir
        self._pending: list[MetricRow] = []
        self._last_flush = time.monotonic()
        self.write_seconds = 0.0  # time the training process spent on tracking

    @classmethod
    def open(
        cls,
        process: TrackingProcess,
        settings: Settings,
        spec: ExperimentSpec | LMExperimentSpec,
        *,
        parent_run_id: str | None = None,
        tags: dict[str, str] | None = None,
    ) -> RemoteRun:
        """Ask for a new run for `spec`; training may start before the answer comes."""
        seq = process.request(
            "open",
            awaited=True,
            uri=settings.tracking_uri,
            experiment=spec.experiment_name,
            artifact_root=str(settings.artifact_root) if settings.artifact_root else None,
            tags=run_tags(spec, parent_run_id, tags),
            params={k: param_value(v) for k, v in flatten(spec.resolved()).items()},
            spec_text=dump_spec(spec),
            runs_dir=str(settings.runs_dir),
        )
        return cls(process, seq, settings)

    @classmethod
    def reopen(
        cls, process: TrackingProcess, settings: Settings, run_id: str, run_dir: Path, tags: dict
    ) -> RemoteRun:
        """Continue `run_id` (a resumed run): RUNNING again, owned by this process."""
        from ppo_platform.tracking import tags as tag

        owned = {**tags, tag.PROCESS: this_process()}
        seq = process.request(
            "reopen", awaited=True, uri=settings.tracking_uri, run_id=run_id, tags=owned
        )
        return cls(process, seq, settings, run_dir)

    def _answer_open(self) -> None:
        started = time.perf_counter()
        reply = self.process.wait(self._opened)
        self.write_seconds += time.perf_counter() - started
        self._run_id = reply["run_id"]
        if self._run_dir is None:
            self._run_dir = Path(reply["run_dir"])

    @property
    def run_id(self) -> str:
        """The MLflow run id (waits for the tracking process to have created the run)."""
        if self._run_id is None:
            self._answer_open()
        assert self._run_id is not None
        return self._run_id

    @property
    def run_dir(self) -> Path:
        if self._run_dir is None:
            self._answer_open()
        assert self._run_dir is not None
        return self._run_dir

    def _send(self, op: str, **fields: Any) -> None:
        started = time.perf_counter()
        self.process.request(op, **fields)
        self.write_seconds += time.perf_counter() - started

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        """Buffer metrics at `step`; handed over at the next flush."""
        now_ms = int(time.time() * 1000)
        self._pending.extend((key, float(value), now_ms, step) for key, value in metrics.items())
        if time.monotonic() - self._last_flush >= self.flush_seconds:
            self.flush()

    def flush(self) -> None:
        """Hand buffered rows over (raises TrackingError if the tracking process failed)."""
        pending, self._pending = self._pending, []
        self._last_flush = time.monotonic()
        if pending:
            self._send("rows", rows=pending)
        else:
            self.process.check()

    def set_tags(self, tags: dict[str, str]) -> None:
        self._send("tags", tags=tags)

    def log_artifact(self, path: Path, folder: str | None = None) -> None:
        self._send("artifact", path=str(path), folder=folder)

    def render_plot(self, path: Path, title: str, kl_alert: float) -> None:
        """The tracking process draws the run's curves to `path` and logs it under plots/."""
        self._send("plot", path=str(path), title=title, kl_alert=kl_alert)

    def finish(self, status: str, tags: dict[str, str], timeout: float | None = None) -> None:
        """Hand over the last rows, close the run, and wait until all of it is durable (at most
        `timeout` seconds, default `REPLY_TIMEOUT`)."""
        self.flush()
        started = time.perf_counter()
        try:
            seq = self.process.request("finish", awaited=True, status=status, tags=tags)
            self.process.wait(seq, timeout)
            self.process.check()  # answers come in order: every earlier one is in
        finally:
            self.write_seconds += time.perf_counter() - started

    def fail(self, reason: str) -> None:
        """Close the run FAILED with `reason` after a TrackingError: by the tracking process if
        it still answers (so it never closes the run KILLED over it at exit), else from here."""
        from ppo_platform.tracking import tags as tag

        if self.process.alive:
            tags = {tag.OUTCOME: "failed", tag.FAILURE: reason}
            try:
                seq = self.process.request("finish", awaited=True, status="FAILED", tags=tags)
                self.process.wait(seq, INTERRUPTED_REPLY_TIMEOUT)
                return
            except TrackingError:
                pass  # it failed this too (and was killed if it did not answer)
        self.fail_without_process(reason)

    def fail_without_process(self, reason: str) -> None:
        """The tracking process is gone: close the run FAILED from here (MLflow imported in
        this failure path only), so it is not left RUNNING while this process lives on."""
        from ppo_platform.tracking import tags as tag
        from ppo_platform.tracking.gateway import retry, tracking_client

        client = tracking_client(self.tracking_uri)
        for run_id in self._running_ids(client):
            retry(lambda: client.set_tag(run_id, tag.OUTCOME, "failed"))  # noqa: B023
            retry(lambda: client.set_tag(run_id, tag.FAILURE, reason))  # noqa: B023
            retry(lambda: client.set_terminated(run_id, status="FAILED"))  # noqa: B023

    def _running_ids(self, client: Any) -> list[str]:
        """This run's id; if its answer never came back, the RUNNING runs this process owns."""
        from ppo_platform.tracking import tags as tag
        from ppo_platform.tracking.gateway import retry

        with contextlib.suppress(TrackingError):
            return [self.run_id]  # its answer may have come back before the process died
        ids = [e.experiment_id for e in retry(client.search_experiments)]
        if not ids:
            return []
        owned = f"attributes.status = 'RUNNING' and tags.`{tag.PROCESS}` = '{this_process()}'"
        return [run.info.run_id for run in retry(lambda: client.search_runs(ids, owned))]
