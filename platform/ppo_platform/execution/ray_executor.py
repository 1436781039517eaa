"""Tasks as Ray tasks on a cluster: the executor for jobs, sweeps and studies beyond one machine.

Chosen by `PPO_PLATFORM_EXECUTOR=ray` with `PPO_PLATFORM_RAY_ADDRESS` (see `choose.py`); this
module is the only one that imports Ray, and only when such an executor is built. Each task
declares `ray_num_cpus` (and `ray_num_gpus`) so the cluster, not this process, decides how many
run at once; this process only submits and collects.

A task's settings travel with it: the submitting process's `PPO_PLATFORM_*` and
`MLFLOW_TRACKING_URI` variables are set in the Ray worker (runtime env), so a job writes to the
same stores whatever node runs it. Ray never retries a task by itself (`max_retries=0`): a task
whose worker process or node died comes back `lost`, and the caller decides (the job dispatcher
re-queues the job, which resumes from its last checkpoint).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
import time
import uuid
from typing import Any

from ppo_platform.errors import BadInputError, SpecIssue, UnavailableError
from ppo_platform.execution.base import QueuedExecutor, Task, TaskResult, describe_error
from ppo_platform.execution.body import forget_interrupt, run_body
from ppo_platform.execution.ray_cancel import drop_flags, flag_name
from ppo_platform.execution.signals import HeldCtrlC
from ppo_platform.execution.threads import pin_threads

FORWARDED_PREFIXES = ("PPO_PLATFORM_", "MLFLOW_")
NOT_FORWARDED = frozenset({"PPO_PLATFORM_API_KEYS", "PPO_PLATFORM_API_KEY"})  # tasks need none
# A task's runtime env is shown by Ray's dashboard: secrets never travel in it (a node that
# needs one, e.g. MLFLOW_TRACKING_PASSWORD, has it in its own environment).
SECRET_MARKERS = ("PASSWORD", "TOKEN", "SECRET", "KEY")
CANCELLED_RUNNING = "Cancelled: the Ray task was cancelled"
POLL_SECONDS = 0.2
MAX_BACKOFF_SECONDS = 10.0
CLOSE_GRACE = 120.0  # seconds cancelled tasks still get to close their runs after a repeat

log = logging.getLogger(__name__)


def import_ray() -> Any:
    """The `ray` module, or bad input with the fix when the extra is not installed."""
    try:
        import ray
    except ImportError:
        issue = SpecIssue(
            "PPO_PLATFORM_EXECUTOR",
            "is `ray` but Ray is not installed.",
            "ray",
            fix="pip install 'ppo-platform[ray]', or unset PPO_PLATFORM_EXECUTOR (local).",
        )
        raise BadInputError([issue]) from None
    return ray


def address_answers(address: str, timeout: float = 3.0) -> bool:
    """Something listens at `host:port` (the head's GCS port); `auto` and `ray://` are trusted."""
    host, _, port = address.rpartition(":")
    if address == "auto" or address.startswith("ray://") or not port.isdigit():
        return address == "auto" or address.startswith("ray://")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout):
            return True
    except OSError:
        return False


def connect(address: str | None) -> Any:
    """Join the Ray cluster at `address` once per process; UnavailableError if it does not
    answer, bad input if no address is set."""
    ray = import_ray()
    if not address:
        issue = SpecIssue(
            "PPO_PLATFORM_RAY_ADDRESS",
            "is not set, and the `ray` executor needs a cluster to join.",
            fix="set it to the head's host:port (the address `ray start --head` prints).",
        )
        raise BadInputError([issue])
    if not address_answers(address):  # ray.init would wait minutes for a silent address
        raise UnavailableError(
            f"the Ray cluster at PPO_PLATFORM_RAY_ADDRESS={address} does not answer. "
            "Fix: start it (`ray start --head`) or correct the address."
        )
    if ray.is_initialized():
        return ray
    try:
        ray.init(
            address=address,
            logging_level="ERROR",
            log_to_driver=False,
            configure_logging=False,
        )
    except (ConnectionError, TimeoutError, RuntimeError) as error:
        raise UnavailableError(
            f"the Ray cluster at PPO_PLATFORM_RAY_ADDRESS={address} does not answer: {error}. "
            "Fix: start it (`ray start --head`) or correct the address."
        ) from error
    return ray


def forwarded_env() -> dict[str, str]:
    """The settings of this process that a task must see wherever it runs."""
    return {
        k: v
        for k, v in os.environ.items()
        if k.startswith(FORWARDED_PREFIXES)
        and k not in NOT_FORWARDED
        and not any(marker in k for marker in SECRET_MARKERS)
    }


def call_task(
    task: Task, torch_threads: int, own_group: bool = False, cancel_flag: str | None = None
) -> TaskResult:
    """Every Ray task: pinned threads, then the one task body (`execution/body.py`).

    `own_group` (a fresh worker per task, i.e. jobs): the worker leads its own process group,
    so a job's signal to its group (a cancelled sweep or study) never reaches the Ray node.
    `cancel_flag`: raised by the executor's `cancel`, it interrupts the task (ray_cancel.py)."""
    from ppo_platform.execution import signals
    from ppo_platform.execution.ray_cancel import CancelWatch

    if own_group:
        os.setpgid(0, 0)
    watch_node(own_group)
    pin_threads(torch_threads)
    mark = signals.received()
    with CancelWatch(cancel_flag) as watch:  # Ray's workers ignore SIGINT: unblocked here
        result = run_body(task.key, task.fn, task.args, task.kwargs)
    if watch.fired:  # a cancel of this task, not a signal to the worker: the next task runs
        signals.forget_since(mark)
        forget_interrupt()
    return result


NODE_CHECK_SECONDS = 0.2
_watching: list[int] = []  # the raylet this worker process watches, once per process


def raylet_alive(pid: int) -> bool:
    """True while `pid` runs: not exited, and not a zombie nobody reaped (Ray's own check,
    kill(pid, 0), takes an unreaped dead raylet for a live one)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            state = stat.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X")


def watch_node(own_group: bool) -> None:
    """A worker whose node (its raylet, the parent that started it) died stops at once, with
    everything it started: a job's worker leads its own process group, so the node's death
    does not reach it, and it would go on training and writing to a run the cluster has
    already given up on (docs/guides/cluster.md). Reparenting happens when the raylet exits,
    reaped or not: a changed parent is a dead node."""
    raylet = os.getppid()
    if _watching or raylet <= 1:
        return
    _watching.append(raylet)

    def watch() -> None:
        while os.getppid() == raylet and raylet_alive(raylet):
            time.sleep(NODE_CHECK_SECONDS)
        log.error("the Ray node of this worker died: stopping its task")
        if own_group:
            os.killpg(0, signal.SIGKILL)  # the worker and every process of its job
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="ray-node-watch", daemon=True).start()


def task_options(task: Task, num_gpus: float) -> dict[str, Any]:
    """Ray options of one task: the settings it must see, and the GPUs it needs beyond the
    executor's `num_gpus` (a run on `cuda`: the cluster places it on a node with a GPU)."""
    options: dict[str, Any] = {"runtime_env": {"env_vars": forwarded_env()}}
    if task.num_gpus > num_gpus:
        options["num_gpus"] = task.num_gpus
    return options


class RayExecutor(QueuedExecutor):
    """Submits each task as a Ray task; a thread collects them as they finish.

    `fresh_process` runs every task in a new worker process (Ray's `max_calls=1`), as
    `IsolatedExecutor` does for jobs; otherwise Ray reuses its workers (sweep members).
    """

    runs_here = False

    def __init__(
        self,
        address: str | None,
        *,
        torch_threads: int = 1,
        num_cpus: float = 1.0,
        num_gpus: float = 0.0,
        fresh_process: bool = False,
    ) -> None:
        super().__init__()
        self._ray = connect(address)
        options: dict[str, Any] = {"num_cpus": num_cpus, "max_retries": 0}
        if num_gpus:
            options["num_gpus"] = num_gpus
        if fresh_process:
            options["max_calls"] = 1
        self._remote = self._ray.remote(**options)(call_task)
        self.num_gpus = num_gpus
        self.torch_threads = torch_threads
        self._own_group = fresh_process
        self.executor_id = uuid.uuid4().hex  # names this executor's cancel flags
        self._refs: dict[str, Any] = {}  # key -> ObjectRef of a task not collected yet
        self._cancelled: set[str] = set()
        self._closed = False
        self._wake = threading.Event()
        self.failure: str | None = None  # why collecting results last failed, if it did
        self._collector = threading.Thread(target=self._collect, name="ray-results", daemon=True)
        self._collector.start()

    def submit(self, task: Task) -> None:
        options = task_options(task, self.num_gpus)
        with self._lock:
            if self._closed:
                raise RuntimeError("the executor is shut down")
            self._claim(task.key)
            try:
                ref = self._remote.options(**options).remote(
                    task,
                    self.torch_threads,
                    self._own_group,
                    flag_name(self.executor_id, task.key),
                )
            except Exception as error:  # e.g. the task cannot be serialized
                self._done.put(TaskResult(task.key, error=describe_error(error)))
                return
            self._refs[task.key] = ref
        self._wake.set()

    def _collect(self) -> None:
        """The collector thread: never dies silently. A failure (the head lost, say) is
        logged, its outstanding tasks come back `lost` (their jobs are re-queued) and it
        starts over, backing off; `health()` names the failure until a wait succeeds again."""
        failures = 0
        while True:
            try:
                if self._collect_once():
                    return
            except Exception as error:
                failures += 1
                self.failure = describe_error(error)
                log.exception("collecting Ray results failed (%d in a row)", failures)
                self._lose_outstanding(self.failure)
                time.sleep(min(POLL_SECONDS * 2**failures, MAX_BACKOFF_SECONDS))
            else:
                failures = 0

    def _collect_once(self) -> bool:
        """Wait a moment for a result and hand it out; True when shut down and done."""
        with self._lock:
            by_ref = {ref: key for key, ref in self._refs.items()}
            closed = self._closed
        if not by_ref:
            if closed:
                return True
            self._wake.wait(POLL_SECONDS)
            self._wake.clear()
            return False
        ready, _ = self._ray.wait(list(by_ref), num_returns=1, timeout=POLL_SECONDS)
        self.failure = None  # the cluster answered
        for ref in ready:
            result = self._result(by_ref[ref], ref)
            with self._lock:
                self._refs.pop(result.key, None)
                self._cancelled.discard(result.key)
            self._done.put(result)
        return False

    def _lose_outstanding(self, failure: str) -> None:
        """Every task not collected yet comes back lost (stopped first, if Ray still can)."""
        with self._lock:
            refs, self._refs = self._refs, {}
        for key, ref in refs.items():
            with contextlib.suppress(Exception):
                self._ray.cancel(ref, force=True)
            error = f"results of the Ray cluster could not be collected: {failure}"
            self._done.put(TaskResult(key, error=error, lost=key not in self._cancelled))

    def health(self) -> str | None:
        return self.failure

    def _result(self, key: str, ref: Any) -> TaskResult:
        """The task's own TaskResult, or what Ray says happened to it."""
        exceptions = self._ray.exceptions
        lost_kinds = (
            exceptions.WorkerCrashedError,
            exceptions.NodeDiedError,
            exceptions.OwnerDiedError,
            exceptions.LocalRayletDiedError,
            exceptions.ObjectLostError,
        )
        try:
            result: TaskResult = self._ray.get(ref)
        except exceptions.TaskCancelledError:
            return TaskResult(key, error=CANCELLED_RUNNING, cancelled=True)
        except lost_kinds as error:
            cancelled = key in self._cancelled  # a forced cancel kills the worker
            return TaskResult(key, error=describe_error(error), lost=not cancelled)
        except exceptions.RayError as error:
            return TaskResult(key, error=describe_error(error))
        return result

    def cancel(self, key: str) -> bool:
        """Cancel the task: a queued one never runs; a running one gets KeyboardInterrupt
        within a second (its cancel flag, see ray_cancel.py), so it closes its run KILLED
        with a checkpoint, as under Ctrl-C. False if the task is unknown or already collected.
        """
        from ppo_platform.execution.ray_cancel import raise_flag

        with self._lock:
            if key not in self._refs:
                return False
        raise_flag(flag_name(self.executor_id, key))
        return self._cancel(key, force=False)

    def kill(self, key: str) -> bool:
        """Stop a running task at once (its worker process is killed)."""
        return self._cancel(key, force=True)

    def _cancel(self, key: str, force: bool) -> bool:
        with self._lock:
            ref = self._refs.get(key)
            if ref is None:
                return False
            self._cancelled.add(key)
        self._ray.cancel(ref, force=force)
        return True

    def shutdown(
        self, wait: bool = True, *, cancel_pending: bool = False, grace: float | None = None
    ) -> None:
        with self._lock:
            self._closed = True
            keys = list(self._refs)
        with HeldCtrlC(active=cancel_pending) as held:  # cancelled tasks close their runs
            if cancel_pending:
                for key in keys:
                    self.cancel(key)
            self._wake.set()
            if not wait:
                return
            self._wait_for_collector(keys, grace, held)
        with contextlib.suppress(Exception):  # the cluster may be gone: the flags go with it
            drop_flags(self.executor_id)

    def _wait_for_collector(self, keys: list[str], grace: float | None, held: HeldCtrlC) -> None:
        """Until every task came back; past `grace` the running ones are stopped forcibly. A
        Ctrl-C held meanwhile (a repeat of the cancel: Ray delivers one of its own, a user may
        press it again) does not cut the wait short: it bounds it to CLOSE_GRACE seconds."""
        deadline = None if grace is None else time.monotonic() + grace
        told = killed = False
        while self._collector.is_alive():
            if held.count and not told:
                told = True
                log.warning(
                    "waiting up to %.0f s for %d cancelled task(s) to close their runs",
                    CLOSE_GRACE,
                    len(keys),
                )
                close_by = time.monotonic() + CLOSE_GRACE
                deadline = close_by if deadline is None else min(deadline, close_by)
            if not killed and deadline is not None and time.monotonic() > deadline:
                killed = True
                for key in keys:
                    self.kill(key)
            self._collector.join(POLL_SECONDS)
