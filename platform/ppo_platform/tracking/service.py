"""The tracking process: everything MLflow does for a training run, off the training process.

`python -m ppo_platform.tracking.service` reads JSON-line requests on stdin and answers each
with one JSON line on stdout, carrying its `seq`, once the work is durable in the store. It
imports MLflow as it starts (the training process starts it first, so this import overlaps
torch's), reaps orphaned runs, creates or reopens the run, writes params, tags, metric rows and
artifacts, and renders the run plot (matplotlib, imported here in the background while the
training goes on). One run is open at a time; a worker that trains several runs in a row keeps
one tracking process. On end of input with a run still open (the training process was killed
or crashed), it marks that run KILLED with the reason: nothing is left RUNNING.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import IO, Any

from ppo_platform import tracing
from ppo_platform.spec.names import check_run_id, path_inside
from ppo_platform.tracking import tags as tag
from ppo_platform.tracking.gateway import retry, tracking_client
from ppo_platform.tracking.liveness import reap_orphans_in
from ppo_platform.tracking.local_artifacts import link_artifact
from ppo_platform.tracking.plots import PLOTTED_METRICS, plot_training_curves
from ppo_platform.tracking.queries import metric_history
from ppo_platform.tracking.writer import write_rows

ABANDONED_REASON = (
    "the training process exited without closing the run (killed by a signal, the OOM killer "
    "or a crash); metric rows acknowledged before that are stored"
)
SUPERSEDED_REASON = (
    "the training process started another run before closing this one (it failed while "
    "finishing); metric rows acknowledged before that are stored"
)
MAX_BATCH_PARAMS = 100


@dataclass
class OpenRun:
    """The run this process is writing, and the plotted series it has seen."""

    uri: str
    run_id: str
    history: dict[str, list[tuple[int, float]]] = field(default_factory=lambda: defaultdict(list))
    artifact_uri: str | None = None  # read at the first artifact

    @property
    def client(self) -> Any:
        return tracking_client(self.uri)


def _set_tags(client: Any, run_id: str, tags: dict[str, str]) -> None:
    from mlflow.entities import RunTag

    run_tags = [RunTag(key, str(value)[:5000]) for key, value in tags.items()]
    retry(partial(client.log_batch, run_id, tags=run_tags))


def _log_params(client: Any, run_id: str, params: dict[str, str]) -> None:
    from mlflow.entities import Param

    items = [Param(key, value) for key, value in params.items()]
    for start in range(0, len(items), MAX_BATCH_PARAMS):
        retry(partial(client.log_batch, run_id, params=items[start : start + MAX_BATCH_PARAMS]))


class TrackingService:
    """Handles one request at a time; `handlers` maps each op to its method."""

    def __init__(self) -> None:
        self.run: OpenRun | None = None
        self.not_opened = "no run is open in the tracking process"
        self.handlers: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "reap": self.reap,
            "open": self.open,
            "reopen": self.reopen,
            "recorded_folder": self.recorded_folder,
            "rows": self.rows,
            "tags": self.tags,
            "artifact": self.artifact,
            "plot": self.plot,
            "finish": self.finish,
        }

    def _current(self) -> OpenRun:
        if self.run is None:
            raise RuntimeError(self.not_opened)
        return self.run

    def reap(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"reaped": reap_orphans_in(request["uri"])}

    def open(self, request: dict[str, Any]) -> dict[str, Any]:
        """Create the run (experiment created if missing), params, spec file and folder."""
        from ppo_platform.tracking.tracker import ensure_experiment

        self.close_superseded()
        client = tracking_client(request["uri"])
        root = request["artifact_root"]
        experiment_id = ensure_experiment(
            client, request["experiment"], Path(root) if root else None
        )
        run = retry(lambda: client.create_run(experiment_id, tags=request["tags"]))
        run_id = run.info.run_id
        self.run = OpenRun(request["uri"], run_id)
        _log_params(client, run_id, request["params"])
        run_dir = path_inside(Path(request["runs_dir"]), [check_run_id(run_id)], "run id")
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "spec.yaml").write_text(request["spec_text"])
        retry(partial(client.log_text, run_id, request["spec_text"], "spec/resolved_spec.yaml"))
        _set_tags(client, run_id, {tag.RUN_DIR: str(run_dir)})
        return {"run_id": run_id, "run_dir": str(run_dir)}

    def reopen(self, request: dict[str, Any]) -> dict[str, Any]:
        """Mark a resumed run RUNNING again; its stored curves are read back for the plot."""
        self.close_superseded()
        client = tracking_client(request["uri"])
        run_id = request["run_id"]
        self.run = OpenRun(request["uri"], run_id)
        self.run.history.update(metric_history(client, run_id, PLOTTED_METRICS))
        retry(partial(client.update_run, run_id, status="RUNNING"))
        _set_tags(client, run_id, request["tags"])
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

    def rows(self, request: dict[str, Any]) -> dict[str, Any]:
        run = self._current()
        rows = [tuple(row) for row in request["rows"]]
        write_rows(run.client, run.run_id, rows)  # type: ignore[arg-type]
        for key, value, _, step in rows:
            if key in PLOTTED_METRICS:
                run.history[key].append((step, value))
        return {"rows": len(rows)}

    def tags(self, request: dict[str, Any]) -> dict[str, Any]:
        run = self._current()
        _set_tags(run.client, run.run_id, request["tags"])
        return {}

    def artifact(self, request: dict[str, Any]) -> dict[str, Any]:
        run = self._current()
        if run.artifact_uri is None:
            run.artifact_uri = retry(partial(run.client.get_run, run.run_id)).info.artifact_uri
        if not link_artifact(str(run.artifact_uri), request["path"], request["folder"]):
            call = partial(run.client.log_artifact, run.run_id, request["path"], request["folder"])
            retry(call)
        return {}

    def plot(self, request: dict[str, Any]) -> dict[str, Any]:
        run = self._current()
        path = plot_training_curves(
            {key: sorted(points) for key, points in run.history.items()},
            Path(request["path"]),
            title=request["title"],
            kl_alert=request["kl_alert"],
        )
        retry(partial(run.client.log_artifact, run.run_id, str(path), "plots"))
        return {}

    def finish(self, request: dict[str, Any]) -> dict[str, Any]:
        run = self._current()
        _set_tags(run.client, run.run_id, request["tags"])
        retry(partial(run.client.set_terminated, run.run_id, status=request["status"]))
        self.run = None
        return {}

    def close_superseded(self) -> None:
        """A new run while one is open (a warm worker whose last run failed before closing
        it): close the old one FAILED, never leave it RUNNING."""
        if self.run is None:
            return
        tags = {tag.OUTCOME: "failed", tag.FAILURE: SUPERSEDED_REASON}
        self.finish({"tags": tags, "status": "FAILED"})

    def abandon(self) -> None:
        """End of input with a run open: the training process is gone; mark the run KILLED."""
        if self.run is None:
            return
        tags = {tag.OUTCOME: "killed", tag.FAILURE: ABANDONED_REASON}
        self.finish({"tags": tags, "status": "KILLED"})

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            reply = self.handlers[request["op"]](request)
        except Exception as error:  # answered, never lost: the training process raises it
            reply = {"error": f"{request['op']}: {type(error).__name__}: {error}"}
            if request["op"] in ("open", "reopen"):  # what later requests of the run say
                self.run, self.not_opened = None, f"the run was not opened ({reply['error']})"
        reply["seq"] = request["seq"]
        return reply


def _warm_plotting() -> None:
    """Import matplotlib while training runs, so the final plot costs only its drawing."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot

    tracing.mark("tracking: matplotlib imported (background)")


def serve(requests: IO[str], replies: IO[str]) -> None:
    """Answer requests until end of input, then close a run left open."""
    import logging

    tracing.mark("tracking: serving, importing mlflow")
    import mlflow  # noqa: F401  (first, while the training process imports torch)

    tracing.mark("tracking: mlflow imported")
    logging.getLogger("mlflow").setLevel(logging.WARNING)
    threading.Thread(target=_warm_plotting, daemon=True).start()
    service = TrackingService()
    listening = True
    try:
        for line in requests:
            try:
                request = json.loads(line)
            except ValueError:  # a torn last line: the training process died mid-write
                break
            reply = service.handle(request)
            tracing.mark(f"tracking: {request.get('op')} answered")
            if listening:
                try:
                    replies.write(json.dumps(reply) + "\n")
                    replies.flush()
                except BrokenPipeError:  # the training process is gone: finish what it sent
                    listening = False
    finally:
        tracing.mark("tracking: end of input")
        service.abandon()


def main() -> None:
    """Replies go on the stdout this process was given; anything a library prints there (MLflow
    prints "View run ..." links for tracking servers) goes to stderr instead."""
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
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
