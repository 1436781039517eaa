"""The comparison report of a sweep: variants compared across seeds, read back from MLflow.

Per variant (grid point): final return (mean, std, min over seeds), env steps to reach a return
threshold, stability (std of the eval return over the last 25% of training), mean approx KL and
clip fraction per update, and alert counts. Written as markdown plus two PNG plots and logged
as artifacts of the sweep's parent run under `report/`.

Statistics use the FINISHED runs of a variant; failed runs are counted and listed, and their
curves still appear in the plots (where a run went wrong is worth seeing).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from .errors import RunNotFoundError
from .sweeps import FAILURE_TAG, INDEX_TAG, KEY_TAG, KIND_TAG, POINT_TAG, SEED_TAG, TAG

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

Series = list[tuple[int, float]]
EVAL_KEY, KL_KEY, CLIP_KEY, ALERTS_KEY = (
    "eval/mean_reward",
    "train/approx_kl",
    "train/clip_fraction",
    "diagnostics/alerts_total",
)
LATE_FRACTION = 0.25  # "stability": the last quarter of training


# ---- per-run numbers (pure functions) ---------------------------------------------------------


def final_return(evals: Series) -> float | None:
    return evals[-1][1] if evals else None


def steps_to_threshold(evals: Series, threshold: float | None) -> int | None:
    """The first evaluation step whose mean return reaches `threshold` (None: never)."""
    if threshold is None:
        return None
    return next((step for step, value in evals if value >= threshold), None)


def late_std(evals: Series, fraction: float = LATE_FRACTION) -> float | None:
    """Population std of the eval returns in the last `fraction` of training (None: < 2 evals)."""
    if not evals:
        return None
    cutoff = evals[-1][0] * (1 - fraction)
    late = [value for step, value in evals if step >= cutoff]
    return float(np.std(late)) if len(late) >= 2 else None


def series_mean(points: Series) -> float | None:
    return float(np.mean([value for _, value in points])) if points else None


def default_threshold(env_id: str) -> float | None:
    """gymnasium's `reward_threshold` for the env (475 for CartPole-v1), if it has one."""
    import gymnasium as gym

    from trainers.envs import register_envs

    register_envs()
    try:
        return gym.spec(env_id).reward_threshold
    except gym.error.Error:
        return None


# ---- reading the sweep back -------------------------------------------------------------------


@dataclass(frozen=True)
class SeedRun:
    """One child run of the sweep with the metric histories the report needs."""

    run_id: str
    name: str
    variant: str
    variant_index: int
    seed: int
    status: str
    error: str | None
    evals: Series
    approx_kl: Series
    clip_fraction: Series
    alerts: int

    @property
    def finished(self) -> bool:
        return self.status == "FINISHED"


@dataclass(frozen=True)
class VariantSummary:
    variant: str
    runs: int
    finished: int
    final_mean: float | None
    final_std: float | None
    final_min: float | None
    steps_to_threshold: tuple[int | None, ...]  # one per finished seed
    stability: float | None
    mean_kl: float | None
    mean_clip_fraction: float | None
    alerts: int

    @property
    def reached(self) -> int:
        return sum(step is not None for step in self.steps_to_threshold)

    @property
    def mean_steps_to_threshold(self) -> float | None:
        steps = [s for s in self.steps_to_threshold if s is not None]
        return float(np.mean(steps)) if steps else None


@dataclass
class SweepReport:
    parent_run_id: str
    name: str
    env_id: str
    threshold: float | None
    variants: list[VariantSummary]
    runs: list[SeedRun] = field(repr=False)
    markdown: str = ""
    files: list[Path] = field(default_factory=list)


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None and not math.isnan(v)]
    return float(np.mean(present)) if present else None


def summarize(variant: str, runs: list[SeedRun], threshold: float | None) -> VariantSummary:
    """The report's row for one variant, from its runs (stats over the FINISHED ones)."""
    ok = [run for run in runs if run.finished]
    finals = [v for v in (final_return(run.evals) for run in ok) if v is not None]
    return VariantSummary(
        variant=variant,
        runs=len(runs),
        finished=len(ok),
        final_mean=float(np.mean(finals)) if finals else None,
        final_std=float(np.std(finals)) if finals else None,
        final_min=float(np.min(finals)) if finals else None,
        steps_to_threshold=tuple(steps_to_threshold(run.evals, threshold) for run in ok),
        stability=_mean([late_std(run.evals) for run in ok]),
        mean_kl=_mean([series_mean(run.approx_kl) for run in ok]),
        mean_clip_fraction=_mean([series_mean(run.clip_fraction) for run in ok]),
        alerts=sum(run.alerts for run in runs),
    )


def _history(client: MlflowClient, run_id: str, key: str) -> Series:
    """(step, value) sorted by step then time, one value per step (the last one logged)."""
    metrics = sorted(client.get_metric_history(run_id, key), key=lambda m: (m.step, m.timestamp))
    last: dict[int, float] = {m.step: m.value for m in metrics}
    return sorted(last.items())


def _pick_runs(children: list[Any]) -> list[Any]:
    """One run per sweep member: its FINISHED run if any, else its latest attempt."""
    best: dict[str, Any] = {}
    for run in children:
        key = run.data.tags.get(KEY_TAG)
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

    from .sweeps import child_runs

    try:
        parent = client.get_run(parent_run_id)
    except MlflowException as error:
        raise RunNotFoundError(
            f"no MLflow run {parent_run_id!r}: give the parent run id that "
            "`ppo-platform sweep` printed."
        ) from error
    if parent.data.tags.get(KIND_TAG) != "sweep":
        raise RunNotFoundError(
            f"run {parent_run_id} is not a sweep's parent run (tag {KIND_TAG} is not 'sweep')."
        )
    runs = []
    for run in _pick_runs(child_runs(client, parent.info.experiment_id, parent_run_id)):
        tags, run_id = run.data.tags, run.info.run_id
        alerts = _history(client, run_id, ALERTS_KEY)
        runs.append(
            SeedRun(
                run_id=run_id,
                name=tags.get("mlflow.runName", run_id),
                variant=tags.get(POINT_TAG, "?"),
                variant_index=int(tags.get(INDEX_TAG, "0")),
                seed=int(tags.get(SEED_TAG, "0")),
                status=run.info.status,
                error=tags.get(FAILURE_TAG) or tags.get(f"{TAG}stop_reason"),
                evals=_history(client, run_id, EVAL_KEY),
                approx_kl=_history(client, run_id, KL_KEY),
                clip_fraction=_history(client, run_id, CLIP_KEY),
                alerts=int(alerts[-1][1]) if alerts else int(tags.get(f"{TAG}alerts_total", "0")),
            )
        )
    runs.sort(key=lambda r: (r.variant_index, r.seed))
    return parent, runs


def build_report(client: MlflowClient, parent_run_id: str, out_dir: Path) -> SweepReport:
    """Read the sweep back from MLflow; write report.md, returns.png, kl.png into `out_dir`."""
    parent, runs = load_runs(client, parent_run_id)
    tags = parent.data.tags
    env_id = tags.get(f"{TAG}env_id", "?")
    raw_threshold = tags.get(f"{TAG}threshold")
    threshold = float(raw_threshold) if raw_threshold else None
    if raw_threshold is None:  # a parent from before thresholds were tagged
        threshold = default_threshold(env_id)
    groups: dict[str, list[SeedRun]] = {}
    for run in runs:
        groups.setdefault(run.variant, []).append(run)
    variants = [summarize(variant, members, threshold) for variant, members in groups.items()]
    report = SweepReport(
        parent_run_id, tags.get("mlflow.runName", parent_run_id), env_id, threshold, variants, runs
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    kl_alert = _kl_alert(client, runs)
    report.files = [
        plot_returns(groups, threshold, out_dir / "returns.png", report.name),
        plot_kl(groups, kl_alert, out_dir / "kl.png", report.name),
    ]
    report.markdown = render_markdown(report, parent.data.tags)
    (out_dir / "report.md").write_text(report.markdown, encoding="utf-8")
    summary = {"threshold": threshold, "variants": [asdict(v) for v in variants]}
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    report.files = [out_dir / "report.md", out_dir / "summary.json", *report.files]
    return report


def publish_report(client: MlflowClient, report: SweepReport) -> None:
    """Log the report's files as artifacts of the parent run, under report/."""
    from .tracking import _retry

    for path in report.files:
        _retry(partial(client.log_artifact, report.parent_run_id, str(path), "report"))


def _kl_alert(client: MlflowClient, runs: list[SeedRun]) -> float | None:
    if not runs:
        return None
    value = client.get_run(runs[0].run_id).data.params.get("diagnostics.kl_alert")
    return float(value) if value else None


# ---- markdown ---------------------------------------------------------------------------------


def _num(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "n/a"
    if abs(value) < 1e-12:  # float noise, e.g. the std of identical returns
        value = 0.0
    return f"{value:.{digits}g}" if abs(value) < 0.01 and value != 0 else f"{value:,.{digits}f}"


def _steps_cell(summary: VariantSummary, threshold: float | None) -> str:
    if threshold is None:
        return "n/a (no threshold)"
    if not summary.steps_to_threshold:
        return "n/a"
    seeds = f"{summary.reached}/{len(summary.steps_to_threshold)} seeds"
    mean = summary.mean_steps_to_threshold
    return f"not reached ({seeds})" if mean is None else f"{mean:,.0f} ({seeds})"


def render_markdown(report: SweepReport, parent_tags: dict[str, str]) -> str:
    threshold = report.threshold
    t_text = "n/a" if threshold is None else f"{threshold:g}"
    seeds = parent_tags.get(f"{TAG}seeds", "?")
    finished = sum(run.finished for run in report.runs)
    lines = [
        f"# Sweep report: {report.name}",
        "",
        f"Parent run `{report.parent_run_id}` · env `{report.env_id}` · seeds {seeds} · "
        f"{len(report.runs)} runs, {finished} finished · return threshold {t_text}",
        "",
        f"| variant | runs ok | final return mean ± std | min | env steps to return ≥ {t_text} "
        "| stability (std, last 25%) | mean approx KL | mean clip fraction | alerts |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for v in report.variants:
        final = "n/a" if v.final_mean is None else f"{_num(v.final_mean)} ± {_num(v.final_std)}"
        lines.append(
            f"| {v.variant} | {v.finished}/{v.runs} | {final} | {_num(v.final_min)} | "
            f"{_steps_cell(v, threshold)} | {_num(v.stability)} | {_num(v.mean_kl, 3)} | "
            f"{_num(v.mean_clip_fraction, 3)} | {v.alerts} |"
        )
    lines += [
        "",
        "Final return: last evaluation (mean eval return) of each seed; std over seeds "
        "(population). Env steps: first evaluation at or above the threshold, mean over the "
        "seeds that reached it. Stability: std of the eval return over the last 25% of "
        "training, averaged over seeds. KL and clip fraction: mean per update. Alerts: "
        "diagnostics alerts, summed over seeds.",
        "",
        "## Runs",
        "",
        "| run | variant | seed | status | final return | steps to threshold | mean KL | alerts |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for run in report.runs:
        steps = steps_to_threshold(run.evals, threshold)
        lines.append(
            f"| {run.name} | {run.variant} | {run.seed} | {run.status} | "
            f"{_num(final_return(run.evals))} | {'-' if steps is None else f'{steps:,}'} | "
            f"{_num(series_mean(run.approx_kl), 3)} | {run.alerts} |"
        )
    failed = [run for run in report.runs if not run.finished]
    if failed:
        lines += ["", "## Failed runs", ""]
        lines += [
            f"- `{run.name}` ({run.run_id}): {run.status}: {run.error or 'no error recorded'}"
            for run in failed
        ]
    lines += ["", "![return vs env steps](returns.png)", "", "![approx KL per update](kl.png)", ""]
    return "\n".join(lines)


# ---- plots ------------------------------------------------------------------------------------


def band(curves: list[Series]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Curves over seeds -> (steps, mean, min, max) on the union of their steps.

    Each curve is interpolated only inside its own step range, so a run that stopped early
    does not drag the band down after it ended.
    """
    steps = np.array(sorted({step for curve in curves for step, _ in curve}), dtype=float)
    stacked = np.full((len(curves), len(steps)), np.nan)
    for row, curve in enumerate(curves):
        xs = np.array([s for s, _ in curve], dtype=float)
        ys = np.array([v for _, v in curve], dtype=float)
        inside = (steps >= xs[0]) & (steps <= xs[-1])
        stacked[row, inside] = np.interp(steps[inside], xs, ys)
    return steps, np.nanmean(stacked, 0), np.nanmin(stacked, 0), np.nanmax(stacked, 0)


def _plot_bands(axis: Any, groups: dict[str, list[SeedRun]], attribute: str) -> int:
    drawn = 0
    for color, (variant, runs) in zip(
        plt.rcParams["axes.prop_cycle"].by_key()["color"] * 10, groups.items(), strict=False
    ):
        curves = [getattr(run, attribute) for run in runs if getattr(run, attribute)]
        if not curves:
            continue
        steps, mean, low, high = band(curves)
        axis.plot(steps, mean, color=color, label=f"{variant} (n={len(curves)})")
        axis.fill_between(steps, low, high, color=color, alpha=0.2, linewidth=0)
        drawn += 1
    return drawn


def plot_returns(
    groups: dict[str, list[SeedRun]], threshold: float | None, path: Path, title: str
) -> Path:
    """Eval return vs env steps: mean over seeds per variant, min-max band."""
    fig, axis = plt.subplots(figsize=(9, 5.5))
    _plot_bands(axis, groups, "evals")
    if threshold is not None:
        axis.axhline(
            threshold, color="black", linestyle=":", linewidth=1, label=f"threshold {threshold:g}"
        )
    _finish(fig, axis, path, f"{title}: eval return (mean over seeds, min-max band)", "return")
    return path


def plot_kl(
    groups: dict[str, list[SeedRun]], kl_alert: float | None, path: Path, title: str
) -> Path:
    """Approx KL per update vs env steps: mean over seeds per variant, min-max band."""
    fig, axis = plt.subplots(figsize=(9, 5.5))
    if _plot_bands(axis, groups, "approx_kl"):
        axis.set_yscale("log")
        if kl_alert is not None:
            axis.axhline(
                kl_alert, color="tab:red", linestyle="--", linewidth=1, label=f"alert {kl_alert:g}"
            )
    else:
        axis.text(
            0.5, 0.5, "no approx KL logged", ha="center", va="center", transform=axis.transAxes
        )
    _finish(
        fig,
        axis,
        path,
        f"{title}: approx KL per update (mean over seeds, min-max band)",
        "approx KL",
    )
    return path


def _finish(fig: Any, axis: Any, path: Path, title: str, ylabel: str) -> None:
    axis.set_title(title, fontsize=10)
    axis.set_xlabel("env steps")
    axis.set_ylabel(ylabel)
    axis.grid(alpha=0.3)
    if axis.get_legend_handles_labels()[0]:
        axis.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
