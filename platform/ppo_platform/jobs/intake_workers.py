"""Worker processes that each take one call at a time over their own pipe, and one thread that
reads every answer.

Why not `concurrent.futures.ProcessPoolExecutor`: a call through it wakes three threads of the
API process (its manager thread, its call queue's feeder thread, then the manager again for the
result), each of which must take the GIL from the event loop that serves status reads; at 50
clients that hand-off cost the API process about half a millisecond of CPU per submission and
queued status reads behind it. Here the caller pickles and writes the call to a worker's pipe
itself, and a single reader thread, woken once per answer, sets the caller's future. A worker
holds up to four calls: the one it runs and three waiting in its pipe, so it starts the next
one the moment it has answered, without waiting for this process to hand it over (that gap, the
reader thread's wait for the GIL and a core, left one worker idle half the time at 10 clients
with one call held; with three held, 10 clients got 13% more submissions through, measured in
benchmarks/results/api_latency.md). The calls a worker holds total at most 64 KiB, so writing
one never blocks on a full pipe; a larger one goes only to an idle worker. Past that, calls
wait in `_waiting`.

A worker that dies (killed, out of memory, `os._exit`) closes its pipe: the call it died in is
answered with UnavailableError(`restarted`), the calls held behind it (never read: calls run in
order) go to the next worker, and a fresh worker takes its place.
Calls are plain functions named by reference (pickled by name, never code), answers cross back
pickled.
"""

from __future__ import annotations

import logging
import multiprocessing
import pickle
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from multiprocessing.connection import Connection, wait
from typing import Any

from ppo_platform.errors import UnavailableError

Call = tuple[Callable[..., Any], tuple[Any, ...]]
_CONTEXT = multiprocessing.get_context("spawn")
log = logging.getLogger(__name__)
DEPTH = 4  # calls a worker holds at once: the one it runs and three in its pipe
PIPELINED_BYTES = 64 * 1024  # held calls' bytes at most (a socket pair's buffer is ~200 KiB)


def _serve(
    connection: Connection, runner: Callable[..., Any], start: Call | None, idle: Call | None
) -> None:
    """A worker's life: run `start`, then each call that arrives, answering (ok, value); with
    no call waiting, `idle` first (housekeeping that no call should wait behind)."""
    if start is not None:
        start[0](*start[1])
    while True:
        if idle is not None and not connection.poll():
            _run_idle(idle)
        try:
            fn, args = pickle.loads(connection.recv_bytes())
        except (EOFError, OSError):  # the API process closed the pool, or is gone
            return
        try:
            answer = pickle.dumps((True, runner(fn, *args)))
        except Exception as error:  # `runner` made it safe to pickle
            answer = pickle.dumps((False, error))
        connection.send_bytes(answer)


def _run_idle(idle: Call) -> None:
    try:
        idle[0](*idle[1])
    except Exception:  # housekeeping: the worker serves on, and tries again when next idle
        log.exception("an intake worker's idle work failed")


class _Worker:
    def __init__(self, runner: Callable[..., Any], start: Call | None, idle: Call | None) -> None:
        self.connection, child = _CONTEXT.Pipe()
        self.process = _CONTEXT.Process(
            target=_serve, args=(child, runner, start, idle), name="intake", daemon=True
        )
        self.process.start()
        child.close()
        self.futures: deque[Future[Any]] = deque()  # the calls it holds, oldest first
        self.payloads: deque[bytes] = deque()  # theirs, to send again if it dies
        self.held_bytes = 0

    def takes(self, payload: bytes) -> bool:
        """Idle: any call. Else a call that keeps it within DEPTH calls and PIPELINED_BYTES."""
        held = len(self.futures)
        within = self.held_bytes + len(payload) <= PIPELINED_BYTES
        return held == 0 or (held < DEPTH and within)

    def send(self, future: Future[Any], payload: bytes) -> None:
        self.futures.append(future)
        self.payloads.append(payload)
        self.held_bytes += len(payload)
        self.connection.send_bytes(payload)

    def unsend(self) -> tuple[Future[Any], bytes]:
        """The newest call it holds, taken back (it died: that call was never read)."""
        payload = self.payloads.pop()
        self.held_bytes -= len(payload)
        return self.futures.pop(), payload

    def answered(self) -> Future[Any]:
        """The future of the call it has just answered (the oldest)."""
        self.held_bytes -= len(self.payloads.popleft())
        return self.futures.popleft()

    def stop(self) -> None:
        self.connection.close()
        self.process.join(timeout=0.5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()


class WorkerProcesses:
    """`count` spawned workers running `runner(fn, *args)` for each `call(fn, *args)`."""

    def __init__(
        self,
        count: int,
        runner: Callable[..., Any],
        restarted: str,
        setup: Call | None = None,
        idle: Call | None = None,
    ) -> None:
        """`setup` runs first in every worker (e.g. to exit with this process); `idle` in a
        worker whenever it has no call waiting."""
        self.count, self.runner, self.restarted = count, runner, restarted
        self._start, self._idle = setup, idle
        self._lock = threading.Lock()
        self._workers: dict[Connection, _Worker] = {}  # the reader watches every pipe
        self._waiting: deque[tuple[Future[Any], bytes]] = deque()
        self._started = self._closed = False
        self._wake_read, self._wake_write = _CONTEXT.Pipe(duplex=False)  # close() wakes it
        self._reader = threading.Thread(target=self._read, name="intake-answers", daemon=True)

    def start(self, warm_up: Callable[[], int]) -> list[Future[int]]:
        """Start the workers with a `warm_up` call in each; its futures say when they are
        ready (a pool used without `start` starts at its first call, cold)."""
        self._ensure_started()
        return [self.call(warm_up) for _ in range(self.count)]

    def _ensure_started(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
            for _ in range(self.count):
                worker = _Worker(self.runner, self._start, self._idle)
                self._workers[worker.connection] = worker
        self._reader.start()

    def call(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        """`runner(fn, *args)` in the least busy worker that takes it, else the next free."""
        self._ensure_started()
        future: Future[Any] = Future()
        payload = pickle.dumps((fn, args))
        with self._lock:
            if self._closed:
                raise UnavailableError(self.restarted)
            workers = sorted(self._workers.values(), key=lambda w: len(w.futures))
            worker = next((w for w in workers if w.takes(payload)), None)
            if worker is not None and not self._waiting:
                worker.send(future, payload)
            else:
                self._waiting.append((future, payload))
        return future

    def _read(self) -> None:
        """The reader thread: each answer to its caller, then the worker's next call."""
        while True:
            with self._lock:
                if self._closed:
                    return
                watched = [self._wake_read, *self._workers]
            for ready in wait(watched):
                if ready is not self._wake_read:
                    assert isinstance(ready, Connection)
                    self._answer(ready)

    def _answer(self, connection: Connection) -> None:
        """The answer on `connection` (or its worker's death, even idle) to its caller."""
        with self._lock:
            worker = self._workers.get(connection)
        if worker is None:  # closed meanwhile: close() answered its callers
            return
        try:
            answer = pickle.loads(connection.recv_bytes())
        except (EOFError, OSError):  # it died (idle, or in its oldest call): a fresh one
            self._requeue_unread(worker)  # takes its place
            died_in = worker.answered() if worker.futures else None
            worker = self._replace(worker)
            if died_in is not None:
                died_in.set_exception(UnavailableError(self.restarted))
        else:
            future = worker.answered()
            if answer[0]:
                future.set_result(answer[1])
            else:
                future.set_exception(answer[1])
        if worker is not None:
            self._next_calls(worker)

    def _requeue_unread(self, dead: _Worker) -> None:
        """A worker runs its calls in order and answers each before it reads the next, so the
        calls behind the one it died in were never read: they go first to the next worker."""
        with self._lock:
            while len(dead.futures) > 1:
                self._waiting.appendleft(dead.unsend())

    def _replace(self, dead: _Worker) -> _Worker | None:
        """A fresh worker in place of `dead` (None once the pool is closed)."""
        dead.stop()
        with self._lock:
            self._workers.pop(dead.connection, None)
            if self._closed:
                return None
            fresh = _Worker(self.runner, self._start, self._idle)
            self._workers[fresh.connection] = fresh
            return fresh

    def _next_calls(self, worker: _Worker) -> None:
        """`worker` has room: the oldest waiting calls it takes."""
        with self._lock:
            if self._closed or worker.connection not in self._workers:
                return
            while self._waiting and worker.takes(self._waiting[0][1]):
                worker.send(*self._waiting.popleft())

    def close(self) -> None:
        """Stop every worker; calls not answered yet get UnavailableError."""
        with self._lock:
            self._closed = True
            workers = list(self._workers.values())
            unanswered = [f for w in workers for f in w.futures] + [f for f, _ in self._waiting]
            self._workers.clear()
            self._waiting.clear()
            self._wake_write.send_bytes(b"")
        for future in unanswered:
            if not future.done():
                future.set_exception(UnavailableError(self.restarted))
        for worker in workers:
            worker.stop()
        if self._reader.is_alive() and self._reader is not threading.current_thread():
            self._reader.join(timeout=5)
