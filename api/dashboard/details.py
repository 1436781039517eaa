"""What the experiment page shows besides the live stream: spec, links, report, trials."""

from __future__ import annotations

import json
from typing import Any

from ppo_platform.api.dashboard.markdown import render
from ppo_platform.api.dashboard.view import row, split_alert
from ppo_platform.api.routes.artifacts import RESOLVED_SPEC, _files
from ppo_platform.api.routes.trained_model import model_files
from ppo_platform.errors import IssueError, PlatformError
from ppo_platform.jobs import TERMINAL, Experiment
from ppo_platform.settings import Settings, store_kind
from ppo_platform.spec.lm import LMExperimentSpec
from ppo_platform.spec.loader import dump_spec
from ppo_platform.spec.workloads import stored_spec

HEALTHY_CLIP_BAND = (0.1, 0.3)  # the lessons' healthy clip fraction, as in the training plot
UI = "/v1/experiments"  # the REST routes: the session cookie signs the page in


def error_text(error: PlatformError) -> str:
    """A typed error as one readable paragraph (every issue of a spec error)."""
    if isinstance(error, IssueError):
        return "; ".join(issue.format(error.source) for issue in error.issues)
    return str(error)


def mlflow_link(settings: Settings, run_id: str | None) -> str | None:
    """The MLflow UI page of a run when the tracking store is a server, else None. The link
    carries no credentials: the browser asks for them if the server wants them."""
    uri = settings.tracking_uri
    if not (run_id and uri.startswith(("http://", "https://"))):
        return None
    scheme, rest = uri.split("://", 1)
    host_and_path = rest.rsplit("@", 1)[-1]
    return f"{scheme}://{host_and_path.rstrip('/')}/#/runs/{run_id}"


def _sweep_report(job: Experiment, files: dict[str, Any]) -> Any:
    report = files.get("report.md")  # reports.load writes it beside returns.png and kl.png
    if report is None:
        return None
    return render(report.read_text(), lambda name: f"{UI}/{job.id}/artifacts/{name}")


def _summary_list(files: dict[str, Any], key: str) -> list[dict[str, Any]] | None:
    """A list from a study's summary.json: `trials`, `verification` or `pareto_front`."""
    path = files.get("summary.json")
    if path is None:
        return None
    try:
        found = json.loads(path.read_text()).get(key)
    except (OSError, ValueError):
        return None
    return found if isinstance(found, list) else None


def study_comparison(job: Experiment, settings: Settings) -> Any:
    """A finished study's trials compared (IQM, intervals, verdicts) as safe HTML, or None."""
    if job.kind != "tune" or job.status not in TERMINAL or not job.mlflow_run_id:
        return None
    from ppo_platform.reports.compare import compare_runs  # MLflow: on first use only
    from ppo_platform.reports.compare_render import render_comparison

    try:
        comparison = compare_runs([job.mlflow_run_id], settings.tracking_uri)
    except PlatformError:  # no finished trial to compare: the page says nothing of it
        return None
    return render(render_comparison(comparison, "Trials compared"))


def _diagnosis(files: dict[str, Any]) -> dict[str, Any] | None:
    """The doctor's diagnosis.json of a run that has ended (None: none yet)."""
    path = files.get("diagnosis.json")
    try:
        found = json.loads(path.read_text()) if path is not None else None
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) and isinstance(found.get("causes"), list) else None


def _kl_target(spec: Any) -> float | None:
    """An LM spec's target of lm/kl_ref (adaptive beta), else None."""
    return spec.lm.kl.target if isinstance(spec, LMExperimentSpec) else None


def experiment_context(job: Experiment, settings: Settings) -> dict[str, Any]:
    """Everything the experiment template needs, read once when the page loads."""
    spec = stored_spec(job.spec)
    files = _files(job, settings)
    artifacts = [RESOLVED_SPEC, *files]
    return {
        "job": job,
        "row": row(job),
        "terminal": job.status in TERMINAL,
        "spec_yaml": dump_spec(spec),
        "algorithm": spec.algorithm,
        "kl_alert": spec.diagnostics.kl_alert,
        "kl_target": _kl_target(spec),
        "clip_band": HEALTHY_CLIP_BAND,
        "mlflow_link": mlflow_link(settings, job.mlflow_run_id),
        "tracking_store": store_kind(settings.tracking_uri),
        "artifacts": [(name, f"{UI}/{job.id}/artifacts/{name}") for name in artifacts],
        "model_files": [
            (name, f"{UI}/{job.id}/model/{name}") for name in model_files(job, settings)
        ],
        "videos": [
            (name, f"{UI}/{job.id}/artifacts/{name}")
            for name, path in files.items()
            if path.suffix == ".mp4"
        ],
        "report": _sweep_report(job, files) if job.kind == "sweep" else None,
        "diagnosis": _diagnosis(files) if job.kind == "run" else None,
        "trials": _summary_list(files, "trials") if job.kind == "tune" else None,
        "verified": _summary_list(files, "verification") if job.kind == "tune" else None,
        "pareto": _summary_list(files, "pareto_front") if job.kind == "tune" else None,
        "comparison": study_comparison(job, settings),
        "has_best_spec": "best_spec.yaml" in files,
        "split_alert": split_alert,
    }
