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
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ppo_platform.errors import TrackingError
from ppo_platform.settings import Settings
from ppo_platform.spec.experiment import ExperimentSpec, flatten
from ppo_platform.spec.loader import dump_spec
from ppo_platform.tracking.liveness import this_process
from ppo_platform.tracking.tracker import param_value, run_tags
from ppo_platform.tracking.writer import MetricRow

AckListener = Callable[[list[MetricRow]], None]
# Called in the reader thread with every acknowledged (durably stored) batch of metric rows.
ack_listeners: list[AckListener] = []


def _exit_reason(pid: int, code: int) -> str:
    how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
    return f"the tracking process (pid {pid}) died ({how}); see its message above, if any"


def same_code_env() -> dict[str, str]:
    """The environment for a child `python -m ppo_platform...`: this process's environment with
    the folders this process imported ppo_platform and trainers from first on PYTHONPATH, so the
    child runs the same code (a script may have set sys.path rather than PYTHONPATH)."""
    import importlib.util

    import ppo_platform

    roots = [str(Path(ppo_platform.__file__).resolve().parents[1])]
    found = importlib.util.find_spec("trainers")
    if found is not None and found.submodule_search_locations:
        roots.append(str(Path(next(iter(found.submodule_search_locations))).resolve().parent))
    inherited = os.environ.get("PYTHONPATH")
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([*roots, *([inherited] if inherited else [])]),
    }


def spawn_child(module: str) -> subprocess.Popen[str]:
    """`python -m module` running this process's code, talking JSON lines on its stdin and
    stdout, in its own session: a terminal's Ctrl-C reaches only the parent, which closes what
    the child holds; the child finishes on end of input."""
    return subprocess.Popen(
        [sys.executable, "-m", module],
        env=same_code_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        bufsize=1,
        start_new_session=True,
    )


class TrackingProcess:
    """The child process, the pipe to it, and the answers that came back."""

    def __init__(self) -> None:
        # On end of input (the trainer gone) it closes the run KILLED.
        self.process = spawn_child("ppo_platform.tracking.service")
        self._send_lock = threading.Lock()
        self._state = threading.Condition()
        self._seq = 0
        self._awaited: set[int] = set()
        self._replies: dict[int, dict[str, Any]] = {}
        self._rows_in_flight: dict[int, list[MetricRow]] = {}
        self._errors: list[str] = []
        self._death: str | None = None
        self.acknowledged_rows = 0
        threading.Thread(target=self._read, name="tracking-replies", daemon=True).start()

    @property
    def alive(self) -> bool:
        return self._death is None and self.process.poll() is None

    def request(self, op: str, *, awaited: bool = False, **fields: Any) -> int:
        """Send one request; its answer is kept for `wait` if `awaited`, else only checked."""
        with self._send_lock:
            with self._state:
                self._raise_if_failed()
                self._seq += 1
                seq = self._seq
                if awaited:
                    self._awaited.add(seq)
                if op == "rows":
                    self._rows_in_flight[seq] = fields["rows"]
            assert self.process.stdin is not None
            try:
                self.process.stdin.write(json.dumps({"op": op, "seq": seq, **fields}) + "\n")
                self.process.stdin.flush()
            except (BrokenPipeError, OSError):
                pass  # the reader thread records the death; `wait`/`check` raise it
        return seq

    def wait(self, seq: int) -> dict[str, Any]:
        """The answer to request `seq`; TrackingError if it failed or the process died."""
        with self._state:
            self._state.wait_for(lambda: seq in self._replies or self._death is not None)
            self._awaited.discard(seq)
            reply = self._replies.pop(seq, None)
            if reply is None:
                raise TrackingError(str(self._death))
        if "error" in reply:
            raise TrackingError(f"the tracking process could not {reply['error']}")
        return reply

    def check(self) -> None:
        """Raise TrackingError if an earlier request failed or the process died."""
        with self._state:
            self._raise_if_failed()

    def close(self, timeout: float = 60.0) -> None:
        """End its input and wait for it to exit (a run left open is closed KILLED first), so
        that nothing outlives this process and its CPU time counts as this process's."""
        with contextlib.suppress(OSError, ValueError):
            assert self.process.stdin is not None
            self.process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout)

    def _raise_if_failed(self) -> None:
        if self._errors:
            errors, self._errors = self._errors, []
            raise TrackingError("the tracking process could not " + "; ".join(errors))
        if self._death is not None:
            raise TrackingError(self._death)

    def _read(self) -> None:
        assert self.process.stdout is not None
        garbled: str | None = None
        try:
            for line in self.process.stdout:
                self._receive(json.loads(line))
        except (ValueError, KeyError, TypeError) as error:  # never a silent hang: a death
            garbled = f"answered garbage ({type(error).__name__}: {error})"
            self.process.kill()
        code = self.process.wait()
        with self._state:
            self._death = garbled or _exit_reason(self.process.pid, code)
            self._state.notify_all()

    def _receive(self, reply: dict[str, Any]) -> None:
        seq = reply["seq"]
        with self._state:
            acked = self._rows_in_flight.pop(seq, None)
            if seq in self._awaited:
                self._replies[seq] = reply
            elif "error" in reply:
                self._errors.append(reply["error"])
            if acked is not None and "error" not in reply:
                self.acknowledged_rows += len(acked)
            self._state.notify_all()
        if acked is not None and "error" not in reply:
            for listener in list(ack_listeners):
                listener(acked)


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
        spec: ExperimentSpec,
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

    def finish(self, status: str, tags: dict[str, str]) -> None:
        """Hand over the last rows, close the run, and wait until all of it is durable."""
        self.flush()
        started = time.perf_counter()
        try:
            seq = self.process.request("finish", awaited=True, status=status, tags=tags)
            self.process.wait(seq)
            self.process.check()  # answers come in order: every earlier one is in
        finally:
            self.write_seconds += time.perf_counter() - started

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
