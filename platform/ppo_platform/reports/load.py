"""Build the comparison report of a sweep: variants compared across seeds, read back from MLflow.

Per variant (grid point): final return (mean, std, min over seeds), env steps to reach a return
threshold, stability (std of the eval return over the last 25% of training), mean approx KL,
post-update KL and clip fraction per update, and alert counts (per signal). Written as markdown
plus three PNG plots (return; approx KL; post-update KL with clip fraction) and logged as
artifacts of the sweep's parent run under `report/`.

Then the variants compared on their final return (`reports.compare`): IQM with a 95% bootstrap
interval per variant, and a verdict of each variant against the first (or a chosen baseline).

Statistics use the FINISHED runs of a variant; failed runs are counted and listed, and their
curves still appear in the plots (where a run went wrong is worth seeing).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ppo_platform.reports.compare import Comparison, compare_scores
from ppo_platform.reports.markdown import render_markdown
from ppo_platform.reports.plots import plot_kl, plot_returns, plot_update_size
from ppo_platform.reports.stats import (
    ALERT_SIGNAL_PREFIX,
    ALERTS_KEY,
    CLIP_KEY,
    EVAL_KEY,
    GYM_WORDS,
    KL_KEY,
    KL_POST_KEY,
    ScoreWords,
    SeedRun,
    SweepReport,
    default_threshold,
    final_return,
    score_words,
    summarize,
)
from ppo_platform.tracking import tags as tag

# The metric histories a report reads back of every member run.
REPORT_KEYS = (EVAL_KEY, KL_KEY, CLIP_KEY, ALERTS_KEY, KL_POST_KEY)


def _alerts_by_signal(latest: dict[str, float]) -> dict[str, int]:
    """Alerts per signal from a run's latest `diagnostics/alerts/<signal>` counts."""
    return {
        key.removeprefix(ALERT_SIGNAL_PREFIX): int(value)
        for key, value in sorted(latest.items())
        if key.startswith(ALERT_SIGNAL_PREFIX) and value > 0
    }


def _pick_runs(children: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One run per sweep member: its FINISHED run if any, else its latest attempt."""
    best: dict[str, dict[str, Any]] = {}
    for run in children:
        key = run["tags"].get(tag.SWEEP_KEY)
        if not key:
            continue
        rank = (run["status"] == "FINISHED", run["start_time"])
        held = best.get(key)
        if held is None or rank > (held["status"] == "FINISHED", held["start_time"]):
            best[key] = run
    return list(best.values())


def _points(run: dict[str, Any], key: str) -> list[tuple[int, float]]:
    return [(int(step), float(value)) for step, value in run["histories"].get(key, [])]


def load_runs(sweep: dict[str, Any]) -> tuple[dict[str, str], list[SeedRun]]:
    """The parent's tags and its members' runs with metric histories, from `sweep` (what
    `tracking.reads.sweep_runs` returns)."""
    runs = []
    for run in _pick_runs(sweep["children"]):
        tags, run_id = run["tags"], run["run_id"]
        alerts = _points(run, ALERTS_KEY)
        runs.append(
            SeedRun(
                run_id=run_id,
                name=tags.get(tag.RUN_NAME, run_id),
                variant=tags.get(tag.GRID_POINT, "?"),
                variant_index=int(tags.get(tag.GRID_INDEX, "0")),
                seed=int(tags.get(tag.SEED, "0")),
                status=run["status"],
                error=tags.get(tag.FAILURE) or tags.get(tag.STOP_REASON),
                evals=_points(run, EVAL_KEY),
                approx_kl=_points(run, KL_KEY),
                clip_fraction=_points(run, CLIP_KEY),
                alerts=int(alerts[-1][1]) if alerts else int(tags.get(tag.ALERTS_TOTAL, "0")),
                approx_kl_post=_points(run, KL_POST_KEY),
                alerts_by_signal=_alerts_by_signal(run["metrics"]),
                top_cause=tags.get(tag.TOP_CAUSE, ""),
            )
        )
    runs.sort(key=lambda r: (r.variant_index, r.seed))
    return dict(sweep["parent"]["tags"]), runs


def compare_variants(
    groups: dict[str, list[SeedRun]],
    env_id: str,
    threshold: float | None,
    baseline: str | None = None,
    words: ScoreWords = GYM_WORDS,
) -> Comparison | None:
    """Final returns per variant compared against `baseline` (default: the first variant);
    None when fewer than one variant has a finished run."""
    scores = {
        variant: {env_id: finals}
        for variant, runs in groups.items()
        if (finals := [v for r in runs if r.finished and (v := final_return(r.evals)) is not None])
    }
    if not scores:
        return None
    first = baseline if baseline is not None else next(iter(scores))
    label = "final eval return" if words is GYM_WORDS else words.score
    return compare_scores(scores, label, baseline=first, threshold=threshold)


def build_report(sweep: dict[str, Any], out_dir: Path, baseline: str | None = None) -> SweepReport:
    """Write report.md, summary.json and the plots of `sweep` (read back from MLflow by
    `tracking.reads.sweep_runs`) into `out_dir`; verdicts against `baseline` (a variant's
    name; default: the first variant)."""
    tags, runs = load_runs(sweep)
    parent_run_id = sweep["parent"]["run_id"]
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
    report.words = score_words(tags.get(tag.ALGORITHM))
    out_dir.mkdir(parents=True, exist_ok=True)
    kl_alert = _diagnostics_limit(sweep, runs, "kl_alert")
    drift = _diagnostics_limit(sweep, runs, "drift_clip_fraction")
    report.files = [
        plot_returns(groups, threshold, out_dir / "returns.png", report.name, report.words),
        plot_kl(groups, kl_alert, out_dir / "kl.png", report.name),
        plot_update_size(groups, kl_alert, drift, out_dir / "update_size.png", report.name),
    ]
    report.comparison = compare_variants(groups, env_id, threshold, baseline, report.words)
    report.markdown = render_markdown(report, tags)
    (out_dir / "report.md").write_text(report.markdown, encoding="utf-8")
    summary: dict[str, Any] = {"threshold": threshold, "variants": [asdict(v) for v in variants]}
    if report.comparison is not None:
        summary["comparison"] = report.comparison.to_json()
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    report.files = [out_dir / "report.md", out_dir / "summary.json", *report.files]
    return report


def _diagnostics_limit(sweep: dict[str, Any], runs: list[SeedRun], name: str) -> float | None:
    """A `diagnostics.<name>` threshold as the first run logged it (None: no run, no param)."""
    if not runs:
        return None
    first = next(run for run in sweep["children"] if run["run_id"] == runs[0].run_id)
    value = first["params"].get(f"diagnostics.{name}")
    return float(value) if value else None
