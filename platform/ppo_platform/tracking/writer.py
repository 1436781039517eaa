"""A writer process that does the MLflow metric writes, off the training process.

MLflow's SQL store spends ~1 ms of Python per metric row; a PPO run logs ~40 metrics per
update, which inline would cost 5-10% of a CartPole run's wall time. Training hands batches to
one long-lived writer process per training process (`python -m ppo_platform.tracking.writer`,
JSON lines over a pipe, so it works from scripts without a main guard, notebooks and daemonic
workers alike) and only waits for it when a run finishes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import uuid
from functools import partial
from typing import IO, Any

from ppo_platform.tracking.gateway import retry, tracking_client

MetricRow = tuple[str, float, int, int]  # key, value, timestamp ms, step
MAX_BATCH_METRICS = 1000
DRAIN_TIMEOUT = 60.0  # seconds a drain waits for the writer's confirmation


class MetricsWriteError(RuntimeError):
    """The writer could not store some metrics (the message says which run and why)."""


def write_rows(client: Any, run_id: str, rows: list[MetricRow]) -> None:
    """Write rows with `log_batch` in MLflow-sized chunks (retrying on SQLite locks)."""
    from mlflow.entities import Metric

    metrics = [Metric(key, value, timestamp, step) for key, value, timestamp, step in rows]
    for start in range(0, len(metrics), MAX_BATCH_METRICS):
        chunk = metrics[start : start + MAX_BATCH_METRICS]
        retry(partial(client.log_batch, run_id, metrics=chunk))


def serve(requests: IO[str], replies: IO[str]) -> None:
    """Writer loop over JSON lines: {"op": "rows", uri, run_id, rows} | {"op": "drain", token}."""
    import logging

    logging.getLogger("mlflow").setLevel(logging.WARNING)
    errors: list[str] = []
    for line in requests:
        message = json.loads(line)
        if message["op"] == "drain":
            replies.write(json.dumps({"token": message["token"], "errors": errors}) + "\n")
            replies.flush()
            errors = []
            continue
        try:
            client = tracking_client(message["uri"])  # one client per tracking URI
            write_rows(client, message["run_id"], [tuple(row) for row in message["rows"]])
        except Exception as error:  # reported at the next drain, never lost silently
            errors.append(f"run {message['run_id']}: {type(error).__name__}: {error}")


class WriterProcess:
    """The child process and the pipe to it."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "ppo_platform.tracking.writer"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
            # Its own session: a terminal's Ctrl-C (SIGINT to the foreground group) reaches
            # only the trainer, which then drains this writer. On EOF (trainer gone) it exits.
            start_new_session=True,
        )
        self.lock = threading.Lock()

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(message) + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError) as error:
            raise MetricsWriteError(f"metrics writer exited ({self.process.poll()})") from error

    def submit(self, uri: str, run_id: str, rows: list[MetricRow]) -> None:
        with self.lock:
            self._send({"op": "rows", "uri": uri, "run_id": run_id, "rows": rows})

    def drain(self, timeout: float = DRAIN_TIMEOUT) -> None:
        """Block until every submitted row is written (at most `timeout` seconds: then the
        writer is killed); raise if any write failed."""
        token = uuid.uuid4().hex
        with self.lock:
            self._send({"op": "drain", "token": token})
            reply: dict[str, Any] = {}
            reader = threading.Thread(target=self._read_until, args=(token, reply), daemon=True)
            reader.start()
            reader.join(timeout)
            if reader.is_alive():  # killed: the reader meets end of output and ends
                self.process.kill()
                raise MetricsWriteError(
                    f"metrics writer (pid {self.process.pid}) did not confirm its writes within "
                    f"{timeout:.0f} s (a store locked by another process?); killed"
                )
        if "errors" not in reply:
            raise MetricsWriteError(f"metrics writer exited ({self.process.poll()})")
        if reply["errors"]:
            raise MetricsWriteError("; ".join(reply["errors"]))

    def _read_until(self, token: str, reply: dict[str, Any]) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            answer = json.loads(line)
            if answer["token"] == token:
                reply.update(answer)
                return


_writer: WriterProcess | None = None
_writer_pid: int | None = None
_start_lock = threading.Lock()


def shared_writer() -> WriterProcess:
    """This process's writer, started on first use and restarted if it died."""
    global _writer, _writer_pid
    with _start_lock:
        if _writer is None or _writer_pid != os.getpid() or not _writer.alive:
            _writer, _writer_pid = WriterProcess(), os.getpid()
        return _writer


if __name__ == "__main__":
    serve(sys.stdin, sys.stdout)
