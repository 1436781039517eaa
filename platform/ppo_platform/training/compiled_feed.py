"""A batch's chunks of updates trained in a thread of their own, handed over in order.

XLA runs the compiled program without the GIL, so the program can train while the process
still imports torch and stable-baselines3 and builds each seed's SB3 model (seconds of
Python that the first update never needed). `ChunkFeed` trains the batch in a daemon thread
and queues each chunk's metrics and end state, up to `AHEAD_BYTES` of them; the batch takes
them one by one (`chunks()`) and feeds its sessions as if it had trained them itself. A stop
(a cancel, an alert with `on_alert: stop`, every seed done) ends the thread at its next chunk:
chunks trained past the stop are dropped, never fed, so a seed ends where it would have.

`close()` stops the thread and waits for it (at most the chunk it is in, as a signal to a run
that trains in the caller's thread waits for XLA to return); so does the process at exit, for
a feed nobody took. A thread left inside XLA while the interpreter shuts down is killed there,
and the C++ beneath it aborts the process (exit -6 instead of 143 after SIGTERM).

The chunk lengths are the batch's own: each chunk ends at the first update boundary at or past
the next evaluation or checkpoint (`ChunkPlan`), which only the spec decides (a batch's seeds
share their schedules), so the thread knows them before any session exists.
"""

from __future__ import annotations

import atexit
import math
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.training.compiled_path import MAX_CHUNK

if TYPE_CHECKING:
    from ppo_platform.trainers.compiled.ppo import CompiledPPO

# A chunk: (first update, metrics (seeds, updates), {"params", "opt"} batched over seeds).
Chunk = tuple[int, dict[str, Any], dict[str, Any]]
# Chunks trained and not yet taken, at most: as many as fit in AHEAD_BYTES (each holds every
# seed's weights and Adam state), at least 2, at most MAX_AHEAD (a whole run of CartPole's
# 100k steps is 7 chunks: the training never waits for the imports).
AHEAD_BYTES = 64 * 2**20
MAX_AHEAD = 16
_END = object()
_running: set[ChunkFeed] = set()  # started, thread not yet ended
_running_lock = threading.Lock()


def _nbytes(tree: Any) -> int:
    import jax

    return sum(int(getattr(x, "nbytes", 0)) for x in jax.tree_util.tree_leaves(tree))


@dataclass(frozen=True)
class ChunkPlan:
    """Where a batch's chunks end: at `MAX_CHUNK` updates, or earlier at the first update
    boundary at or past the next evaluation or checkpoint (0: none)."""

    batch_size: int
    every_eval: int
    every_checkpoint: int

    @classmethod
    def of(cls, spec: ExperimentSpec) -> ChunkPlan:
        return cls(
            spec.batch_size, spec.evaluation.every_timesteps, spec.checkpoints.every_timesteps
        )

    def next_chunk(self) -> Callable[[int], int]:
        """`next_chunk(done)` for `CompiledPPO.train`, called once per chunk in order: a
        due step, once reached, moves on by whole periods past it (as a seed's evaluation and
        checkpoint do)."""
        due = {every: every for every in (self.every_eval, self.every_checkpoint) if every}

        def next_chunk(done: int) -> int:
            steps = done * self.batch_size
            for every, step in due.items():
                if steps >= step:
                    due[every] = step + every * ((steps - step) // every + 1)
            updates = [math.ceil(step / self.batch_size) - done for step in due.values()]
            return max(1, min(updates, default=MAX_CHUNK))

        return next_chunk


class ChunkFeed:
    """`program` training `seeds` on `threads` threads in a daemon thread, from `start()`."""

    def __init__(
        self, program: CompiledPPO, seeds: Sequence[int], threads: int, plan: ChunkPlan
    ) -> None:
        self.program, self.seeds, self.threads, self.plan = program, list(seeds), threads, plan
        self._chunks: queue.Queue[Any] = queue.Queue()
        self._room = threading.Semaphore(0)  # chunks the thread may still queue (set at the first)
        self._ahead = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._train, name="compiled-train", daemon=True)

    def start(self) -> ChunkFeed:
        with _running_lock:
            _running.add(self)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stopped, and its thread ended."""
        self.stop()
        if self._thread.is_alive():
            self._thread.join()

    def matches(self, seeds: Sequence[int], threads: int, plan: ChunkPlan) -> bool:
        return (self.seeds, self.threads, self.plan) == (list(seeds), threads, plan)

    def chunks(self) -> Iterator[Chunk]:
        """Each chunk in order as it is trained; what the training raised, raised here."""
        while True:
            item = self._take()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def stop(self) -> None:
        """No chunk after the one being trained; the thread ends there."""
        self._stop.set()

    def _take(self) -> Any:
        # A timeout, not one blocking get: the main thread stays free to take Ctrl-C/SIGTERM.
        while True:
            try:
                item = self._chunks.get(timeout=0.5)
                self._room.release()
                return item
            except queue.Empty:
                if not self._thread.is_alive() and self._chunks.empty():
                    raise RuntimeError(
                        "the compiled training thread ended without a word"
                    ) from None

    def _train(self) -> None:
        try:
            self.program.train(self.seeds, self._hand_over, self.plan.next_chunk(), self.threads)
            self._put(_END)
        except BaseException as error:  # raised in the taker's thread by `chunks`
            self._put(error)
        finally:
            with _running_lock:
                _running.discard(self)

    def _hand_over(self, first: int, metrics: dict[str, Any], state: dict[str, Any]) -> bool:
        if not self._ahead:  # the first chunk: how many this batch's may wait
            size = max(1, _nbytes(state) + _nbytes(metrics))
            self._ahead = max(2, min(MAX_AHEAD, AHEAD_BYTES // size))
            for _ in range(self._ahead):
                self._room.release()
        self._put((first, metrics, state))
        return self._stop.is_set()

    def _put(self, item: Any) -> None:
        """`item` queued once there is room (the end and an error always are)."""
        if item is _END or isinstance(item, BaseException):
            self._chunks.put(item)
            return
        while not self._stop.is_set():
            if self._room.acquire(timeout=0.1):
                self._chunks.put(item)
                return


@atexit.register
def _close_running() -> None:
    """Every feed's thread out of XLA before the interpreter shuts down."""
    with _running_lock:
        feeds = list(_running)
    for feed in feeds:
        feed.close()
