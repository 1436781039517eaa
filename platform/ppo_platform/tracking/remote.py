"""The tracking client: the caller's side of the tracking process (`tracking/service.py`).

No process that trains, tunes or runs a job imports MLflow: it starts one tracking process
(first, so that MLflow's import overlaps torch's), hands it requests as JSON lines and goes on.
A reader thread collects the answers; a metric row counts as stored once its answer (the
acknowledgement) has come back. `RemoteRun` is the handle of one run of any kind (training run,
trial, study, sweep parent); as a context manager it closes the run exactly once, with the
status the exception implies. `RemoteRun.finish` waits until every request is durable. If the
tracking process dies or fails a request, the next call raises `TrackingError` with the reason:
training stops rather than lose metrics silently.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

from ppo_platform import tracing
from ppo_platform.envs.solved import solved_return_of
from ppo_platform.errors import Terminated, TrackingError
from ppo_platform.settings import Settings, get_settings
from ppo_platform.spec.experiment import ExperimentSpec, flatten
from ppo_platform.spec.lm import LMExperimentSpec
from ppo_platform.spec.loader import dump_spec
from ppo_platform.spec.workloads import spec_subject
from ppo_platform.tracking import tags as tag
from ppo_platform.tracking.liveness import owner_tags, this_process
from ppo_platform.tracking.process import INTERRUPTED_REPLY_TIMEOUT, MetricRow
from ppo_platform.tracking.process import TrackingProcess as TrackingProcess
from ppo_platform.tracking.process import ack_listeners as ack_listeners
from ppo_platform.tracking.process import shared_tracking_process as shared_tracking_process


@contextlib.contextmanager
def runs_closed_on_interrupt() -> Iterator[None]:
    """Runs asked for inside the block and still open when an interrupt leaves it are closed
    KILLED: a Ctrl-C or a cancel can land between asking for a run and holding its handle
    (a worker process lives on, so its tracking process would keep such a run RUNNING)."""
    process = shared_tracking_process()
    before = process.open_runs()
    try:
        yield
    except KeyboardInterrupt as error:
        left_open = process.open_runs() - before
        if left_open:
            tracing.mark(f"interrupted: closing {len(left_open)} run(s) left open")
            process.close_runs(left_open, "KILLED", interrupted_tags(error))
        raise


def interrupted_tags(error: KeyboardInterrupt) -> dict[str, str]:
    """The tags of a run closed KILLED by an interrupt: Ctrl-C or SIGTERM, said as such."""
    reason = "terminated (SIGTERM)" if isinstance(error, Terminated) else "interrupted"
    return {tag.OUTCOME: "cancelled", tag.FAILURE: reason}


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr, flush=True)


def param_value(value: Any) -> str:
    """A spec value as an MLflow param (JSON for lists and dicts, cut to MLflow's limit)."""
    text = json.dumps(value) if isinstance(value, (list, dict)) else str(value)
    return text[:6000]  # MLflow's limit on a param value


def run_tags(
    spec: ExperimentSpec | LMExperimentSpec,
    parent_run_id: str | None = None,
    tags: dict[str, str] | None = None,
) -> dict[str, str]:
    """The tags a new run of `spec` starts with; this process is recorded as its owner."""
    run_tags = {
        tag.RUN_NAME: spec.name,
        tag.SPEC_HASH: spec.spec_hash(),
        tag.ALGORITHM: spec.algorithm,
        tag.ENV_ID: spec_subject(spec),  # an LM run has no env: its policy folder
        **spec.tracking.tags,
        **(tags or {}),
        **owner_tags(),
    }
    if parent_run_id:
        run_tags[tag.PARENT_RUN_ID] = parent_run_id
    solved = solved_return_of(spec.env.id) if isinstance(spec, ExperimentSpec) else None
    if solved is not None:
        run_tags[tag.SOLVED_RETURN] = repr(solved)
    return run_tags


def member_name(name: str, seed: int) -> str:
    """The run name of seed `seed` in a batch of the spec named `name`."""
    return f"{name}-s{seed}"


def member_tags(
    spec: ExperimentSpec, seed: int, tags: dict[str, str] | None = None
) -> dict[str, str]:
    """`tags` and those of seed `seed`'s run in a batch of `spec`'s seeds: its name, its seed
    and its member key (a resumed batch's second attempt at a seed replaces the first)."""
    return {
        **(tags or {}),
        tag.RUN_NAME: member_name(spec.name, seed),
        tag.SEED: str(seed),
        tag.SWEEP_KEY: f"seed-{seed}",
    }


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
    """One run as its caller sees it: metrics buffered, then handed over. As a context manager
    it closes the run on the way out, exactly once: FINISHED, or KILLED on an interrupt, or
    FAILED with the error; a run already finished is left as it is."""

    def __init__(
        self,
        process: TrackingProcess,
        opened: int,
        settings: Settings,
        run_dir: Path | None = None,
    ) -> None:
        self.process, self._opened = process, opened
        self.handle = opened  # requests about this run name it by the seq that opened it
        self.closed = False
        self.phase = ""  # said in the failure of an error that closes the run ("while ...")
        self.tracking_uri, self.flush_seconds = (
            settings.tracking_uri,
            settings.metrics_flush_seconds,
        )
        self._run_id: str | None = None
        self._open_failed: TrackingError | None = None
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
        alongside: bool = False,
    ) -> RemoteRun:
        """Ask for a new run for `spec`; training may start before the answer comes.
        `alongside`: the runs this process has open stay open (a batch of seeds trains them
        together); otherwise an open one is a failed run's leftover and is closed FAILED."""
        seq = process.request(
            "open",
            awaited=True,
            alongside=alongside,
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
    def open_kind(
        cls,
        kind: str,
        tags: dict[str, str],
        *,
        experiment: str | None = None,
        params: dict[str, Any] | None = None,
        texts: dict[str, str] | None = None,
        settings: Settings | None = None,
    ) -> RemoteRun:
        """A new run of `kind` (trial, study, sweep, training) in `experiment`, or, without
        one, in the experiment of the run `tags` name as parent; owned by this process."""
        settings = settings or get_settings()
        process = shared_tracking_process()
        seq = process.request(
            "open",
            awaited=True,
            kind=kind,
            uri=settings.tracking_uri,
            experiment=experiment,
            artifact_root=str(settings.artifact_root) if settings.artifact_root else None,
            tags={**tags, **owner_tags()},
            params={k: param_value(v) for k, v in (params or {}).items()},
            texts=texts or {},
        )
        return cls(process, seq, settings)

    @classmethod
    def reopen(
        cls,
        process: TrackingProcess,
        settings: Settings,
        run_id: str,
        run_dir: Path | None,
        tags: dict,
        kind: str = "training",
    ) -> RemoteRun:
        """Continue `run_id` (a resumed run, study or sweep): RUNNING again, owned by this
        process."""
        owned = {**tags, tag.PROCESS: this_process()}
        seq = process.request(
            "reopen", awaited=True, kind=kind, uri=settings.tracking_uri, run_id=run_id, tags=owned
        )
        return cls(process, seq, settings, run_dir)

    def __enter__(self) -> RemoteRun:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.closed:
            return
        if error is None:
            self.finish("FINISHED", {})
        elif isinstance(error, TrackingError):
            self.fail(str(error))  # the tracking process failed: closed FAILED with why
        elif isinstance(error, KeyboardInterrupt):
            tracing.mark("interrupted: closing the run KILLED")
            try:
                self.finish("KILLED", interrupted_tags(error), INTERRUPTED_REPLY_TIMEOUT)
            except TrackingError:
                pass  # what the tracking process could not store must not hide the interrupt
            except Exception as broken:
                _warn(f"interrupted: closing the run failed: {type(broken).__name__}: {broken}")
            tracing.mark("interrupted: run closed")
        else:
            where = f" {self.phase}" if self.phase else ""
            reason = f"{type(error).__name__}{where}: {error}"
            with contextlib.suppress(TrackingError):  # the error on its way out says more
                self.finish("FAILED", {tag.OUTCOME: "failed", tag.FAILURE: reason})

    def _answer_open(self) -> None:
        """The answer to the open request, once: a failed open fails every later ask at once
        (its answer was taken; waiting for it again would wait out REPLY_TIMEOUT)."""
        if self._open_failed is not None:
            raise self._open_failed
        started = time.perf_counter()
        try:
            reply = self.process.wait(self._opened)
        except TrackingError as error:
            self._open_failed = error
            raise
        finally:
            self.write_seconds += time.perf_counter() - started
        self._run_id = reply["run_id"]
        if self._run_dir is None and reply.get("run_dir"):  # training runs have a folder
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
        self.process.request(op, run=self.handle, **fields)
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

    def log_text(self, text: str, artifact_file: str) -> None:
        self._send("text", text=text, file=artifact_file)

    def render_plot(self, path: Path, title: str, kl_alert: float, deferred: bool = False) -> None:
        """The tracking process draws the run's curves to `path` and logs it under plots/,
        before the run's close is answered; `deferred`: after it, once the tracking process
        is idle, and always before it lets its caller go (a sweep's warm worker)."""
        self._send("plot", path=str(path), title=title, kl_alert=kl_alert, deferred=deferred)

    def finish(
        self, status: str, tags: dict[str, str] | None = None, timeout: float | None = None
    ) -> None:
        """Hand over the last rows, close the run, and wait until all of it is durable (at most
        `timeout` seconds, default `REPLY_TIMEOUT`). The run is closed once: a second finish
        does nothing."""
        if self.closed:
            return
        self.closed = True
        started = time.perf_counter()
        try:
            self.flush()
            seq = self.process.request(
                "finish", awaited=True, run=self.handle, status=status, tags=tags or {}
            )
            self.process.wait(seq, timeout)
            self.process.check()  # answers come in order: every earlier one is in
        except TrackingError as error:
            self.fail(str(error))  # closed FAILED with why, never left RUNNING
            raise
        finally:
            self.write_seconds += time.perf_counter() - started

    def fail(self, reason: str) -> None:
        """Close the run FAILED with `reason` after a TrackingError: by the tracking process if
        it still answers (so it never closes the run KILLED over it at exit), else from here."""
        self.closed = True
        if self.process.alive:
            tags = {tag.OUTCOME: "failed", tag.FAILURE: reason}
            try:
                seq = self.process.request(
                    "finish", awaited=True, run=self.handle, status="FAILED", tags=tags
                )
                self.process.wait(seq, INTERRUPTED_REPLY_TIMEOUT)
                return
            except TrackingError:
                pass  # it failed this too (and was killed if it did not answer)
        self.fail_without_process(reason)

    def fail_without_process(self, reason: str) -> None:
        """The tracking process is gone: a fresh, short-lived one closes the run FAILED (so
        this process still never imports MLflow), and it is not left RUNNING while this
        process lives on: the run's id if its answer came back, else every RUNNING run this
        process owns. If even that fails, the next start's reaper marks it KILLED."""
        tags = {tag.OUTCOME: "failed", tag.FAILURE: reason}
        run_id: str | None = None
        with contextlib.suppress(TrackingError):
            run_id = self.run_id  # its answer may have come back before the process died
        fresh = TrackingProcess()
        try:
            op, which = (
                ("terminate", {"run_id": run_id})
                if run_id is not None
                else ("close_owned", {"owner": this_process()})
            )
            uri = self.tracking_uri
            fresh.wait(
                fresh.request(op, awaited=True, uri=uri, status="FAILED", tags=tags, **which)
            )
        except TrackingError as error:
            _warn(f"the run could not be closed FAILED ({error}); the next start marks it KILLED")
        finally:
            fresh.close()
