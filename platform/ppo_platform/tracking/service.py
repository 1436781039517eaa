"""The tracking process: the one writer of MLflow, off the process that trains or tunes.

The tracking process (`python -m ppo_platform.tracking.callers`, this service behind it) reads
JSON-line requests on stdin and answers each with one JSON line on stdout, carrying its `seq`,
once the work is durable in the store. It imports MLflow as it starts (the training process
starts it first, so this import overlaps torch's), reaps orphaned runs, opens runs of every kind
(training run, trial, study, sweep parent), writes their params, tags, metric rows, texts and
artifacts, finds children, closes runs, and renders a training run's plot (matplotlib, imported
here in the background when the first training run opens, while it trains: a process that tracks
only a sweep's parent or a study never imports it). A plot is drawn before its run's close is
answered, so the run a caller gets back is whole; a sweep member's plot may be deferred: drawn
once no request waits, after its close is answered (its warm worker trains the next member
meanwhile), and always before the process ends. Requests about an open run name it by `run`:
the `seq` of the request that opened it. At most one run of each kind is open at a time (a
worker that trains several runs in a row keeps one tracking process). On end of input with runs
still open (the caller was killed or crashed), it marks them KILLED with the reason: nothing is
left RUNNING. Who it answers (the process that started it, and processes that share it) is
`tracking/callers.py`.
"""

from __future__ import annotations

import contextlib
import fcntl
import re
import sys
import threading
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from ppo_platform import tracing
from ppo_platform.errors import RunNotFoundError
from ppo_platform.spec.names import check_run_id, path_inside
from ppo_platform.tracking import tags as tag
from ppo_platform.tracking.gateway import retry, tracking_client
from ppo_platform.tracking.liveness import reap_orphans_in
from ppo_platform.tracking.local_artifacts import link_artifact
from ppo_platform.tracking.plots import PLOTTED_METRICS, plot_training_curves
from ppo_platform.tracking.queries import child_runs, metric_history, search_all
from ppo_platform.tracking.reads import sweep_runs
from ppo_platform.tracking.store_calls import ensure_experiment, log_params, set_tags, write_rows

ABANDONED_REASON = (
    "the training process exited without closing the run (killed by a signal, the OOM killer "
    "or a crash); metric rows acknowledged before that are stored"
)
SUPERSEDED_REASON = (
    "the training process started another run before closing this one (it failed while "
    "finishing); metric rows acknowledged before that are stored"
)
# Plots queued at most: a busy process (many sharing workers) still draws them as it goes.
MAX_QUEUED_PLOTS = 2
# A tag value a `find` may match on: ids, hashes and names the platform made (no quotes).
SAFE_TAG_VALUE = re.compile(r"^[A-Za-z0-9_.:/@+-]{1,256}$")


@dataclass
class OpenRun:
    """A run this process is writing, and the plotted series it has seen."""

    uri: str
    run_id: str
    kind: str = "training"
    history: dict[str, list[tuple[int, float]]] = field(default_factory=lambda: defaultdict(list))
    artifact_uri: str | None = None  # read at the first artifact

    @property
    def client(self) -> Any:
        return tracking_client(self.uri)


@dataclass
class QueuedPlot:
    """A run's plot waiting to be drawn: the run, its series when it was asked for, the ask."""

    uri: str
    run_id: str
    series: dict[str, list[tuple[int, float]]]
    request: dict[str, Any]


class TrackingService:
    """Handles one request at a time; `handlers` maps each op to its method."""

    def __init__(self) -> None:
        self.runs: dict[int, OpenRun] = {}  # by the seq of the request that opened the run
        self.plots: list[QueuedPlot] = []  # drawn once no request waits, oldest first
        self.not_opened: dict[int, str] = {}  # why a run was not opened, by that seq
        self.handlers: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "reap": self.reap,
            "store": self.store,
            "open": self.open,
            "reopen": self.reopen,
            "recorded_folder": self.recorded_folder,
            "find": self.find,
            "read_sweep": self.read_sweep,
            "terminate": self.terminate,
            "close_owned": self.close_owned,
            "attach": self.attach,
            "rows": self.rows,
            "tags": self.tags,
            "text": self.text,
            "artifact": self.artifact,
            "plot": self.plot,
            "finish": self.finish,
        }

    def _current(self, request: dict[str, Any]) -> OpenRun:
        handle = request.get("run")
        run = self.runs.get(handle) if isinstance(handle, int) else None
        if run is None:
            reason = self.not_opened.get(handle) if isinstance(handle, int) else None
            raise RuntimeError(reason or "no such run is open in the tracking process")
        return run

    def reap(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"reaped": reap_orphans_in(request["uri"])}

    def store(self, request: dict[str, Any]) -> dict[str, Any]:
        """Create the store (under `lock`, a file): processes starting together must not all
        create a fresh SQLite MLflow database at once (they collide)."""
        with open(request["lock"], "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                retry(partial(tracking_client(request["uri"]).search_experiments, max_results=1))
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
        return {}

    def open(self, request: dict[str, Any]) -> dict[str, Any]:
        """Create a run of `kind` (in `experiment`, created if missing, or in its parent's),
        with tags, params and texts; a training run also gets its folder and spec file. A run
        opened `alongside` those open (a batch's seeds) supersedes none of them."""
        kind = request.get("kind", "training")
        if not request.get("alongside"):
            self.close_superseded(kind)
        if kind == "training":
            warm_plotting()
        client = tracking_client(request["uri"])
        if request.get("experiment"):
            root = request.get("artifact_root")
            experiment_id = ensure_experiment(
                client, request["experiment"], Path(root) if root else None
            )
        else:  # a child run (a trial) lives in its parent's experiment
            parent = retry(partial(client.get_run, request["tags"][tag.PARENT_RUN_ID]))
            experiment_id = parent.info.experiment_id
        run = retry(lambda: client.create_run(experiment_id, tags=request["tags"]))
        run_id = run.info.run_id
        self.runs[request["seq"]] = OpenRun(request["uri"], run_id, kind)
        log_params(client, run_id, request.get("params", {}))
        for artifact_file, text in request.get("texts", {}).items():
            retry(partial(client.log_text, run_id, text, artifact_file))
        reply = {"run_id": run_id}
        if request.get("runs_dir"):
            run_dir = path_inside(Path(request["runs_dir"]), [check_run_id(run_id)], "run id")
            run_dir.mkdir(parents=True, exist_ok=True)
            (run_dir / "spec.yaml").write_text(request["spec_text"])
            retry(partial(client.log_text, run_id, request["spec_text"], "spec/resolved_spec.yaml"))
            set_tags(client, run_id, {tag.RUN_DIR: str(run_dir)})
            reply["run_dir"] = str(run_dir)
        return reply

    def reopen(self, request: dict[str, Any]) -> dict[str, Any]:
        """Mark a run RUNNING again (a resumed run, study or sweep); a training run's stored
        curves are read back for its plot."""
        kind = request.get("kind", "training")
        self.close_superseded(kind)
        if kind == "training":
            warm_plotting()
        client = tracking_client(request["uri"])
        run_id = check_run_id(request["run_id"])
        run = OpenRun(request["uri"], run_id, kind)
        if kind == "training":
            run.history.update(metric_history(client, run_id, PLOTTED_METRICS))
        retry(partial(client.update_run, run_id, status="RUNNING"))
        self.runs[request["seq"]] = run
        set_tags(client, run_id, request["tags"])
        return {"run_id": run_id}

    def recorded_folder(self, request: dict[str, Any]) -> dict[str, Any]:
        """The run folder a run records (None for a run the store does not know)."""
        from mlflow.exceptions import MlflowException

        client = tracking_client(request["uri"])
        try:
            run = retry(partial(client.get_run, request["run_id"]))
        except MlflowException:
            return {"folder": None}
        return {"folder": run.data.tags.get(tag.RUN_DIR)}

    def find(self, request: dict[str, Any]) -> dict[str, Any]:
        """The runs of `experiment` (None if it does not exist yet) that are children of
        `parent` (if given) and carry every tag in `tags`: id, status, start time, tags."""
        client = tracking_client(request["uri"])
        experiment = retry(partial(client.get_experiment_by_name, request["experiment"]))
        if experiment is None:
            return {"runs": []}
        conditions = [f"tags.`{key}` = '{_safe(value)}'" for key, value in request["tags"].items()]
        parent = request.get("parent")
        if parent:
            runs = child_runs(client, experiment.experiment_id, check_run_id(parent))
            wanted = request["tags"]
            runs = [r for r in runs if all(r.data.tags.get(k) == v for k, v in wanted.items())]
        else:
            runs = search_all(client, experiment.experiment_id, " and ".join(conditions))
        found = [
            {
                "run_id": run.info.run_id,
                "status": run.info.status,
                "start_time": run.info.start_time,
                "tags": dict(run.data.tags),
            }
            for run in runs
        ]
        return {"runs": sorted(found, key=lambda run: run["start_time"])}

    def read_sweep(self, request: dict[str, Any]) -> dict[str, Any]:
        """A sweep's parent and member runs as plain data (`reads.sweep_runs`)."""
        client = tracking_client(request["uri"])
        try:
            return {"sweep": sweep_runs(client, request["run_id"], request["keys"])}
        except RunNotFoundError as error:  # bad input, raised as such by the caller
            return {"not_found": str(error)}

    def attach(self, request: dict[str, Any]) -> dict[str, Any]:
        """Log files as artifacts of a run not open here (a finished sweep's report)."""
        client = tracking_client(request["uri"])
        run_id = check_run_id(request["run_id"])
        for path in request["paths"]:
            retry(partial(client.log_artifact, run_id, path, request["folder"]))
        return {}

    def terminate(self, request: dict[str, Any]) -> dict[str, Any]:
        """Close a run not open here (left RUNNING by a dead process) with `status` and tags;
        with `only_running`, a run already closed is left as it is."""
        client = tracking_client(request["uri"])
        run_id = check_run_id(request["run_id"])
        check = request.get("only_running")
        status = retry(partial(client.get_run, run_id)).info.status if check else "RUNNING"
        if status != "RUNNING":
            return {"closed": False}
        if request.get("tags"):
            set_tags(client, run_id, request["tags"])
        retry(partial(client.set_terminated, run_id, status=request["status"]))
        return {"closed": True}

    def close_owned(self, request: dict[str, Any]) -> dict[str, Any]:
        """Close with `status` and tags every RUNNING run whose owner tag is `owner`: a caller
        whose tracking process died before it learned its run's id (`RemoteRun.fail`)."""
        client = tracking_client(request["uri"])
        ids = [e.experiment_id for e in retry(client.search_experiments)]
        owned = (
            f"attributes.status = 'RUNNING' and tags.`{tag.PROCESS}` = '{_safe(request['owner'])}'"
        )
        runs = (
            [r.info.run_id for r in retry(partial(client.search_runs, ids, owned))] if ids else []
        )
        for run_id in runs:
            set_tags(client, run_id, request["tags"])
            retry(partial(client.set_terminated, run_id, status=request["status"]))
        return {"closed": runs}

    def rows(self, request: dict[str, Any]) -> dict[str, Any]:
        run = self._current(request)
        rows = [tuple(row) for row in request["rows"]]
        write_rows(run.client, run.run_id, rows, run.uri)  # type: ignore[arg-type]
        for key, value, _, step in rows:
            if key in PLOTTED_METRICS:
                run.history[key].append((step, value))
        return {"rows": len(rows)}

    def tags(self, request: dict[str, Any]) -> dict[str, Any]:
        run = self._current(request)
        set_tags(run.client, run.run_id, request["tags"])
        return {}

    def text(self, request: dict[str, Any]) -> dict[str, Any]:
        run = self._current(request)
        retry(partial(run.client.log_text, run.run_id, request["text"], request["file"]))
        return {}

    def artifact(self, request: dict[str, Any]) -> dict[str, Any]:
        run = self._current(request)
        if run.artifact_uri is None:
            run.artifact_uri = retry(partial(run.client.get_run, run.run_id)).info.artifact_uri
        if not link_artifact(str(run.artifact_uri), request["path"], request["folder"]):
            call = partial(run.client.log_artifact, run.run_id, request["path"], request["folder"])
            retry(call)
        return {}

    def plot(self, request: dict[str, Any]) -> dict[str, Any]:
        """Draw the run's plot from its series as they are now, before the next request is
        read; `deferred`: queue it instead, drawn once no request waits (`draw_plot`), so the
        run's close is answered first and its process starts its next run meanwhile. At most
        `MAX_QUEUED_PLOTS` wait; an older one is drawn now."""
        run = self._current(request)
        series = {key: sorted(points) for key, points in run.history.items()}
        self.plots.append(QueuedPlot(run.uri, run.run_id, series, request))
        limit = MAX_QUEUED_PLOTS if request.get("deferred") else 0
        while len(self.plots) > limit:
            self.draw_plot()
        return {}

    def draw_plot(self) -> bool:
        """Draw and store the oldest queued plot; False if none was queued. Its run may be
        closed already: a plot that fails is said on stderr and fails nothing else."""
        if not self.plots:
            return False
        queued = self.plots.pop(0)
        try:
            path = plot_training_curves(
                queued.series,
                Path(queued.request["path"]),
                title=queued.request["title"],
                kl_alert=queued.request["kl_alert"],
            )
            client = tracking_client(queued.uri)
            retry(partial(client.log_artifact, queued.run_id, str(path), "plots"))
        except Exception as error:
            print(
                f"warning: the plot of run {queued.run_id} was not stored: {error}",
                file=sys.stderr,
                flush=True,
            )
        tracing.mark("tracking: plot drawn")
        return True

    def finish(self, request: dict[str, Any]) -> dict[str, Any]:
        run = self._current(request)
        set_tags(run.client, run.run_id, request["tags"])
        retry(partial(run.client.set_terminated, run.run_id, status=request["status"]))
        del self.runs[request["run"]]
        return {}

    def close_superseded(self, kind: str) -> None:
        """A new run of a kind while one of that kind is open (a warm worker whose last run
        failed before closing it): close the old one FAILED, never leave it RUNNING."""
        for handle, run in list(self.runs.items()):
            if run.kind == kind:
                tags = {tag.OUTCOME: "failed", tag.FAILURE: SUPERSEDED_REASON}
                self.finish({"run": handle, "tags": tags, "status": "FAILED"})

    def abandon(self) -> None:
        """End of input: the queued plots are drawn; runs still open (their caller is gone)
        are marked KILLED (children first: the newest run opened is closed first)."""
        while self.draw_plot():
            pass
        for handle in sorted(self.runs, reverse=True):
            tags = {tag.OUTCOME: "killed", tag.FAILURE: ABANDONED_REASON}
            with contextlib.suppress(Exception):  # the others are still closed
                self.finish({"run": handle, "tags": tags, "status": "KILLED"})

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            reply = self.handlers[request["op"]](request)
        except Exception as error:  # answered, never lost: the caller raises it
            reply = {"error": f"{request['op']}: {type(error).__name__}: {error}"}
            if request["op"] in ("open", "reopen"):  # what later requests of the run say
                self.not_opened[request["seq"]] = f"the run was not opened ({reply['error']})"
        reply["seq"] = request["seq"]
        return reply


def _safe(value: str) -> str:
    """A tag value fit for a search filter (the platform's own ids and hashes)."""
    if not SAFE_TAG_VALUE.match(value):
        raise ValueError(f"cannot search for the tag value {value!r}")
    return value


_plotting: list[threading.Thread] = []  # matplotlib's import, started once per process


def warm_plotting() -> None:
    """At the first training run of this process (whichever caller's): import matplotlib in
    the background while it trains, so its plot at the end costs only the drawing."""
    if not _plotting:
        _plotting.append(threading.Thread(target=_import_matplotlib, daemon=True))
        _plotting[0].start()


def _import_matplotlib() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot

    tracing.mark("tracking: matplotlib imported (background)")
