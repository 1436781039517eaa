"""Who the tracking process answers: the process that started it (JSON lines on stdin and
stdout) and, once that one asks it to `listen`, the processes that share it (a sweep's warm
workers) over a Unix socket, the same JSON lines.

Each caller has its own `TrackingService`: its own runs, named by its own request numbers, and
its own "at most one run of a kind" rule; a caller whose input ends (it exited, or was killed)
has its open runs closed KILLED, as a tracking process of its own would have. Reader threads
only parse lines; one thread handles every request, in arrival order, so MLflow's store is
written by one thread of one process.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import socket
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import IO, Any

from ppo_platform import tracing
from ppo_platform.execution.child import answer_stream
from ppo_platform.tracking.service import TrackingService


@dataclass(eq=False)
class Caller:
    """One process the tracking process answers, and the runs it has open here."""

    replies: IO[str]
    connection: socket.socket | None = None  # a sharing process's; None: the starting one
    service: TrackingService = field(default_factory=TrackingService)
    listening: bool = True  # False once its end of the pipe is gone

    def hang_up(self) -> None:
        """Its input ended and its runs are closed: a sharing process sees the connection end."""
        with contextlib.suppress(OSError, ValueError):
            if self.connection is not None:
                self.connection.shutdown(socket.SHUT_RDWR)
                self.connection.close()

    def answer(self, reply: dict[str, Any]) -> None:
        if not self.listening:
            return
        try:
            self.replies.write(json.dumps(reply) + "\n")
            self.replies.flush()
        except (OSError, ValueError):  # the caller is gone: finish what it sent
            self.listening = False


Inbox = queue.SimpleQueue[tuple[Caller, dict[str, Any] | None]]  # None: the caller's input ended


def _read_lines(caller: Caller, lines: Iterable[str], inbox: Inbox) -> None:
    try:
        for line in lines:
            try:
                request = json.loads(line)
            except ValueError:  # a torn last line: the caller died mid-write
                break
            inbox.put((caller, request))
    except OSError:  # a connection reset: the caller is gone
        pass
    inbox.put((caller, None))


def _accept(listener: socket.socket, inbox: Inbox, callers: set[Caller]) -> None:
    """Each connection to `listener` becomes a caller with its own reader thread."""
    while True:
        try:
            connection, _ = listener.accept()
        except OSError:
            return
        caller = Caller(connection.makefile("w", encoding="utf-8"), connection)
        callers.add(caller)  # before its first request: the loop waits for it to end
        lines = connection.makefile("r", encoding="utf-8")
        threading.Thread(target=_read_lines, args=(caller, lines, inbox), daemon=True).start()
        tracing.mark("tracking: a sharing process connected")


def _listen(address: str, inbox: Inbox, callers: set[Caller]) -> dict[str, Any]:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    os.chmod(address, 0o600)
    listener.listen()
    threading.Thread(target=_accept, args=(listener, inbox, callers), daemon=True).start()
    return {"address": address}


def serve(requests: IO[str], replies: IO[str]) -> None:
    """Answer every caller until the starting one's input has ended and no sharing process is
    connected; each caller's runs left open are closed when its input ends."""
    import logging

    tracing.mark("tracking: serving, importing mlflow")
    import mlflow  # noqa: F401  (first, while the training process imports torch)

    tracing.mark("tracking: mlflow imported")
    logging.getLogger("mlflow").setLevel(logging.WARNING)
    inbox: Inbox = queue.SimpleQueue()
    starter = Caller(replies)
    callers = {starter}
    threading.Thread(target=_read_lines, args=(starter, requests, inbox), daemon=True).start()
    try:
        while callers:
            if inbox.empty() and _draw_a_plot(callers):
                continue
            caller, request = inbox.get()
            if request is None:
                tracing.mark("tracking: end of input")
                callers.discard(caller)
                caller.service.abandon()
                caller.hang_up()
                continue
            if request.get("op") == "listen":
                reply = {"seq": request["seq"], **_listen(request["address"], inbox, callers)}
            else:
                reply = caller.service.handle(request)
            tracing.mark(f"tracking: {request.get('op')} answered")
            caller.answer(reply)
    finally:
        for caller in callers:  # only if the loop itself failed
            caller.service.abandon()


def _draw_a_plot(callers: set[Caller]) -> bool:
    """Nothing waits: draw one caller's oldest queued plot (False if none is queued)."""
    return any(caller.service.draw_plot() for caller in callers)


def main() -> None:
    """Replies go on the stdout this process was given; anything a library prints there (MLflow
    prints "View run ..." links for tracking servers) goes to stderr instead."""
    replies = answer_stream()
    serve(sys.stdin, replies)
    # Everything is answered and durable (each store call commits; files are closed): skip the
    # interpreter's teardown of MLflow, SQLAlchemy and matplotlib (~0.6 s the trainer waits for).
    for stream in (replies, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    tracing.mark("tracking: os._exit")
    os._exit(0)


if __name__ == "__main__":
    main()
