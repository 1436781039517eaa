"""Build the comparison report of a sweep: variants compared across seeds, read back from MLflow.

Per variant (grid point): final return (mean, std, min over seeds), env steps to reach a return
threshold, stability (std of the eval return over the last 25% of training), mean approx KL,
post-update KL and clip fraction per update, and alert counts (per signal). Written as markdown
plus three PNG plots (return; approx KL; post-update KL with clip fraction) and logged as
artifacts of the sweep's parent run under `report/`.

Statistics use the FINISHED runs of a variant; failed runs are counted and listed, and their
curves still appear in the plots (where a run went wrong is worth seeing).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ppo_platform.errors import RunNotFoundError
from ppo_platform.reports.markdown import render_markdown
from ppo_platform.reports.plots import plot_kl, plot_returns, plot_update_size
from ppo_platform.reports.stats import (
    ALERT_SIGNAL_PREFIX,
    ALERTS_KEY,
    CLIP_KEY,
    EVAL_KEY,
    KL_KEY,
    KL_POST_KEY,
    SeedRun,
    Series,
    SweepReport,
    default_threshold,
    summarize,
)
from ppo_platform.tracking import tags as tag
from ppo_platform.tracking.gateway import retry
from ppo_platform.tracking.queries import child_runs

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient


def _history(client: MlflowClient, run_id: str, key: str) -> Series:
    """(step, value) sorted by step then time, one value per step (the last one logged)."""
    metrics = sorted(
        retry(partial(client.get_metric_history, run_id, key)), key=lambda m: (m.step, m.timestamp)
    )
    last: dict[int, float] = {m.step: m.value for m in metrics}
    return sorted(last.items())


def _alerts_by_signal(latest: dict[str, float]) -> dict[str, int]:
    """Alerts per signal from a run's latest `diagnostics/alerts/<signal>` counts."""
    return {
        key.removeprefix(ALERT_SIGNAL_PREFIX): int(value)
        for key, value in sorted(latest.items())
        if key.startswith(ALERT_SIGNAL_PREFIX) and value > 0
    }


def _pick_runs(children: list[Any]) -> list[Any]:
    """One run per sweep member: its FINISHED run if any, else its latest attempt."""
    best: dict[str, Any] = {}
    for run in children:
        key = run.data.tags.get(tag.SWEEP_KEY)
        if not key:
            continue
        rank = (run.info.status == "FINISHED", run.info.start_time)
        held = best.get(key)
        if held is None or rank > (held.info.status == "FINISHED", held.info.start_time):
            best[key] = run
    return list(best.values())


def load_runs(client: MlflowClient, parent_run_id: str) -> tuple[Any, list[SeedRun]]:
    """The parent run and its members' runs with metric histories."""
    from mlflow.exceptions import MlflowException

    try:
        parent = retry(partial(client.get_run, parent_run_id))
    except MlflowException as error:
        raise RunNotFoundError(
            f"no MLflow run {parent_run_id!r}: give the parent run id that "
            "`ppo-platform sweep` printed."
        ) from error
    if parent.data.tags.get(tag.KIND) != "sweep":
        raise RunNotFoundError(
            f"run {parent_run_id} is not a sweep's parent run (tag {tag.KIND} is not 'sweep')."
        )
    runs = []
    for run in _pick_runs(child_runs(client, parent.info.experiment_id, parent_run_id)):
        tags, run_id = run.data.tags, run.info.run_id
        alerts = _history(client, run_id, ALERTS_KEY)
        runs.append(
            SeedRun(
                run_id=run_id,
                name=tags.get(tag.RUN_NAME, run_id),
                variant=tags.get(tag.GRID_POINT, "?"),
                variant_index=int(tags.get(tag.GRID_INDEX, "0")),
                seed=int(tags.get(tag.SEED, "0")),
                status=run.info.status,
                error=tags.get(tag.FAILURE) or tags.get(tag.STOP_REASON),
                evals=_history(client, run_id, EVAL_KEY),
                approx_kl=_history(client, run_id, KL_KEY),
                clip_fraction=_history(client, run_id, CLIP_KEY),
                alerts=int(alerts[-1][1]) if alerts else int(tags.get(tag.ALERTS_TOTAL, "0")),
                approx_kl_post=_history(client, run_id, KL_POST_KEY),
                alerts_by_signal=_alerts_by_signal(run.data.metrics),
            )
        )
    runs.sort(key=lambda r: (r.variant_index, r.seed))
    return parent, runs


def build_report(client: MlflowClient, parent_run_id: str, out_dir: Path) -> SweepReport:
    """Read the sweep back from MLflow; write report.md, returns.png, kl.png into `out_dir`."""
    parent, runs = load_runs(client, parent_run_id)
    tags = parent.data.tags
    env_id = tags.get(tag.ENV_ID, "?")
    raw_threshold = tags.get(tag.THRESHOLD)
    threshold = float(raw_threshold) if raw_threshold else None
    if raw_threshold is None:  # a parent from before thresholds were tagged
        threshold = default_threshold(env_id)
    groups: dict[str, list[SeedRun]] = {}
    for run in runs:
        groups.setdefault(run.variant, []).append(run)
    variants = [summarize(variant, members, threshold) for variant, members in groups.items()]
    report = SweepReport(
        parent_run_id, tags.get(tag.RUN_NAME, parent_run_id), env_id, threshold, variants, runs
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    kl_alert = _diagnostics_limit(client, runs, "kl_alert")
    drift = _diagnostics_limit(client, runs, "drift_clip_fraction")
    report.files = [
        plot_returns(groups, threshold, out_dir / "returns.png", report.name),
        plot_kl(groups, kl_alert, out_dir / "kl.png", report.name),
        plot_update_size(groups, kl_alert, drift, out_dir / "update_size.png", report.name),
    ]
    report.markdown = render_markdown(report, parent.data.tags)
    (out_dir / "report.md").write_text(report.markdown, encoding="utf-8")
    summary = {"threshold": threshold, "variants": [asdict(v) for v in variants]}
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    report.files = [out_dir / "report.md", out_dir / "summary.json", *report.files]
    return report


def publish_report(client: MlflowClient, report: SweepReport) -> None:
    """Log the report's files as artifacts of the parent run, under report/."""
    for path in report.files:
        retry(partial(client.log_artifact, report.parent_run_id, str(path), "report"))


def _diagnostics_limit(client: MlflowClient, runs: list[SeedRun], name: str) -> float | None:
    """A `diagnostics.<name>` threshold as the first run logged it (None: no run, no param)."""
    if not runs:
        return None
    value = retry(partial(client.get_run, runs[0].run_id)).data.params.get(f"diagnostics.{name}")
    return float(value) if value else None
