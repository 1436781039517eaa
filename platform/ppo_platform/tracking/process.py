"""The training process's tracking process: the child, the JSON-line pipe to it, and its answers.

`TrackingProcess` sends requests and a reader thread collects the answers; every wait on one is
bounded (`REPLY_TIMEOUT`): a tracking process that does not answer in time is killed and the
run fails with what was pending, never hangs. `RemoteRun` (`tracking/remote.py`) builds a
run's requests on top of it.

A process may share its tracking process (`listen`): a sweep's workers send their members'
runs to the sweep's one tracking process (`use_tracking_process`) instead of each starting one,
so MLflow is imported and the store opened once per sweep. Each connection keeps its own runs
there: a worker that dies has its open runs closed KILLED, as a tracking process of its own
would have.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
from collections.abc import Callable
from typing import Any

from ppo_platform import tracing
from ppo_platform.errors import TrackingError
from ppo_platform.execution.child import JsonLinesChild, JsonLinesConnection

# How long the training process waits for any one answer of its tracking process. An answer
# normally comes in milliseconds; a store locked by another process may hold one up to the
# SQLite busy timeout (30 s) per retry. Past this the run fails with what was still pending.
REPLY_TIMEOUT = 60.0
# After Ctrl-C or SIGTERM: the user is waiting for the command to end.
INTERRUPTED_REPLY_TIMEOUT = 15.0
# At exit, how long a tracking process with nothing pending gets to exit before it is killed
# (it has answered everything: nothing acknowledged can be lost).
IDLE_EXIT_TIMEOUT = 10.0  # (with a request pending or a run open: INTERRUPTED_REPLY_TIMEOUT)
MetricRow = tuple[str, float, int, int]  # key, value, timestamp ms, step
AckListener = Callable[[list[MetricRow]], None]
# Called in the reader thread with every acknowledged (durably stored) batch of metric rows.
ack_listeners: list[AckListener] = []


class TrackingProcess:
    """The child process, the pipe to it, and the answers that came back; with `address`, a
    connection to the tracking process another process started and shares (`listen`)."""

    def __init__(self, address: str | None = None) -> None:
        self._send_lock = threading.Lock()
        self._state = threading.Condition()
        self._seq = 0
        self._awaited: set[int] = set()
        self._replies: dict[int, dict[str, Any]] = {}
        self._rows_in_flight: dict[int, list[MetricRow]] = {}
        self._unanswered: dict[int, str] = {}  # seq -> op, for a timeout's message
        self._open_runs: set[int] = set()  # runs open there (closing them at exit writes)
        self._errors: list[str] = []
        self._death: str | None = None
        self.acknowledged_rows = 0
        # Started last: its reader thread calls back into the state above. On end of input
        # (the trainer gone) it closes the runs left open KILLED.
        who = "the tracking process"
        self.child: JsonLinesChild | JsonLinesConnection
        if address is None:
            self.child = JsonLinesChild(
                "ppo_platform.tracking.callers", who, self._receive, self._ended
            )
        else:
            self.child = JsonLinesConnection(address, who, self._receive, self._ended)
        # The child process, if this process started it (a shared one is not ours to wait on).
        self.process = self.child.process if isinstance(self.child, JsonLinesChild) else None

    @property
    def alive(self) -> bool:
        return self._death is None and self.child.alive

    def listen(self, address: str) -> None:
        """Have the tracking process accept connections on the Unix socket `address` (a path
        in a folder only this user can enter) from processes that share it; `address` is
        usable as soon as it exists: connecting waits for it."""
        self.request("listen", address=address)

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
                self._unanswered[seq] = op
                if op in ("open", "reopen"):
                    self._open_runs.add(seq)
                elif op == "finish":
                    self._open_runs.discard(fields.get("run", -1))
            # A broken pipe: the reader thread records the death; `wait`/`check` raise it.
            self.child.send({"op": op, "seq": seq, **fields})
        return seq

    def wait(self, seq: int, timeout: float | None = None) -> dict[str, Any]:
        """The answer to request `seq`; TrackingError if it failed, the process died, or no
        answer came within `timeout` seconds (default `REPLY_TIMEOUT`)."""
        limit = REPLY_TIMEOUT if timeout is None else timeout
        with self._state:
            self._state.wait_for(lambda: seq in self._replies or self._death is not None, limit)
            self._awaited.discard(seq)
            reply = self._replies.pop(seq, None)
            if reply is None and self._death is None:
                # Killed, so that it writes nothing after the run is failed from here.
                self._death = self._no_answer(seq, limit)
                self.child.kill()
            if reply is None:
                raise TrackingError(str(self._death))
        if "error" in reply:
            raise TrackingError(f"the tracking process could not {reply['error']}")
        return reply

    def _no_answer(self, seq: int, timeout: float) -> str:
        ops = list(self._unanswered.values())
        counts = ", ".join(f"{ops.count(op)} {op}" for op in dict.fromkeys(ops))
        rows = sum(len(rows) for rows in self._rows_in_flight.values())
        return (
            f"the tracking process (pid {self.child.pid}) did not answer request "
            f"{self._unanswered.get(seq, '?')} (#{seq}) within {timeout:.0f} s; pending: "
            f"{counts or 'nothing'} ({rows} metric rows unacknowledged). A store locked by "
            "another process or an overloaded machine; the run stops here"
        )

    def open_runs(self) -> frozenset[int]:
        """The handles of the runs asked for here and not finished yet."""
        with self._state:
            return frozenset(self._open_runs)

    def close_runs(self, handles: frozenset[int], status: str, tags: dict[str, str]) -> None:
        """Close `handles` (newest first) with `status` and `tags`, each waited for at most
        `INTERRUPTED_REPLY_TIMEOUT`; one that cannot be closed does not keep the others open."""
        for handle in sorted(handles, reverse=True):
            with contextlib.suppress(TrackingError):
                seq = self.request("finish", awaited=True, run=handle, status=status, tags=tags)
                self.wait(seq, INTERRUPTED_REPLY_TIMEOUT)

    @property
    def pending(self) -> int:
        """Requests sent and not answered yet."""
        with self._state:
            return len(self._unanswered)

    def check(self) -> None:
        """Raise TrackingError if an earlier request failed or the process died."""
        with self._state:
            self._raise_if_failed()

    def close(self, timeout: float | None = None) -> None:
        """End its input and wait for it to exit (a run left open is closed KILLED first), so
        that nothing outlives this process and its CPU time counts as this process's. With
        nothing pending it gets `IDLE_EXIT_TIMEOUT` seconds, else `REPLY_TIMEOUT`; then it is
        killed (a run it could not close is marked KILLED by the next start's reaper)."""
        if timeout is None:
            busy = self.pending or self._open_runs
            timeout = INTERRUPTED_REPLY_TIMEOUT if busy else IDLE_EXIT_TIMEOUT
        tracing.mark(f"tracking close: pending {self.pending}, wait up to {timeout:.0f} s")
        if not self.child.close(timeout):
            tracing.mark("tracking close: timed out, killed it")
        tracing.mark("tracking close: exited")

    def _raise_if_failed(self) -> None:
        if self._errors:
            errors, self._errors = self._errors, []
            raise TrackingError("the tracking process could not " + "; ".join(errors))
        if self._death is not None:
            raise TrackingError(self._death)

    def _ended(self, reason: str) -> None:
        """The reader thread's last word: the process is gone (or answered garbage)."""
        with self._state:
            # A death already recorded (no answer in time: killed) keeps its reason.
            self._death = self._death or reason
            self._state.notify_all()

    def _receive(self, reply: dict[str, Any]) -> None:
        seq = reply["seq"]
        with self._state:
            acked = self._rows_in_flight.pop(seq, None)
            self._unanswered.pop(seq, None)
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
_shared_address: str | None = None  # the tracking process to connect to, not yet connected


def use_tracking_process(address: str) -> None:
    """This process's runs go to the tracking process listening at `address` (its sweep's)
    rather than to one of its own; connected at the next `shared_tracking_process`."""
    global _shared_address
    _shared_address = address


def shared_tracking_process() -> TrackingProcess:
    """This process's tracking process, started on first use (and again if it died), or the
    connection to the shared one `use_tracking_process` named (once: if it cannot be reached
    or is lost, this process starts its own)."""
    global _process, _process_pid, _shared_address
    with _start_lock:
        if _process is None or _process_pid != os.getpid() or not _process.alive:
            address, _shared_address = _shared_address, None
            _process, _process_pid = _connect_or_start(address), os.getpid()
            atexit.register(_process.close)
        return _process


def _connect_or_start(address: str | None) -> TrackingProcess:
    if address is not None:
        try:
            process = TrackingProcess(address)
            tracing.mark("tracking client: connected to the shared tracking process")
            return process
        except OSError:
            tracing.mark("tracking client: shared tracking process unreachable")
    return TrackingProcess()
