"""A comparison as markdown (the terminal, `comparison.md`, the dashboard) and as three plots:
IQM with intervals, performance profiles, the probability-of-improvement matrix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ppo_platform.reports.compare import Comparison
from ppo_platform.reports.plots import LAYOUT, _pyplot
from ppo_platform.reports.statistics import GroupSummary


def _number(value: float) -> str:
    return f"{value:.3g}" if abs(value) < 1 and value != 0 else f"{value:,.1f}"


def _estimate(value: float, ci: tuple[float, float]) -> str:
    return f"{_number(value)} [{_number(ci[0])}, {_number(ci[1])}]"


def _solve_cell(group: GroupSummary) -> str:
    return "n/a" if group.solve_rate is None else group.solve_rate.describe()


def render_comparison(comparison: Comparison, title: str = "Comparison") -> str:
    """Groups with IQM, mean and median (95% bootstrap intervals), then every pair's verdict."""
    scale = " (normalised: 0 = random policy, 1 = solved)" if comparison.normalized else ""
    lines = [
        f"## {title}: {comparison.metric}{scale}",
        "",
        "| group | seeds | IQM [95% CI] | mean [95% CI] | median [95% CI] | solve rate |",
        "|---|---|---|---|---|---|",
    ]
    for g in comparison.groups:
        lines.append(
            f"| {g.name} | {g.n} | {_estimate(g.iqm, g.iqm_ci)} | {_estimate(g.mean, g.mean_ci)} "
            f"| {_estimate(g.median, g.median_ci)} | {_solve_cell(g)} |"
        )
    if comparison.pairs:
        lines += ["", "| A | B | P(A > B) [95% CI] | verdict |", "|---|---|---|---|"]
        for p in comparison.pairs:
            lines.append(
                f"| {p.a} | {p.b} | {_estimate(p.probability_of_improvement, p.ci)} | "
                f"**{p.verdict}** |"
            )
    lines += [
        "",
        "IQM: mean of the middle 50% of seeds. Intervals: stratified percentile bootstrap "
        "(seeded), never outside the observed scores. Verdict: `better`/`worse` when the whole "
        "95% interval of P(A > B) lies above/below 0.5, else `indistinguishable` "
        "(docs/guides/comparing-runs.md).",
    ]
    lines += [f"\n> **Warning:** {warning}" for warning in comparison.warnings]
    if comparison.skipped:
        lines += ["", "Left out: " + "; ".join(comparison.skipped)]
    return "\n".join(lines) + "\n"


def plot_intervals(comparison: Comparison, path: Path) -> Path:
    """IQM per group with its 95% interval."""
    plt = _pyplot()
    groups = comparison.groups
    fig, axis = plt.subplots(figsize=(9, 1.5 + 0.5 * len(groups)))
    rows = np.arange(len(groups))
    values = np.array([g.iqm for g in groups])
    # A percentile interval need not contain its estimate (and identical scores give float
    # noise): a bar never reaches below zero length.
    low = np.clip(values - np.array([g.iqm_ci[0] for g in groups]), 0.0, None)
    high = np.clip(np.array([g.iqm_ci[1] for g in groups]) - values, 0.0, None)
    axis.errorbar(values, rows, xerr=[low, high], fmt="o", capsize=4)
    axis.set_yticks(rows, [f"{g.name} (n={g.n})" for g in groups], fontsize=8)
    axis.invert_yaxis()
    _finish(fig, axis, path, "IQM with 95% bootstrap interval", comparison.metric)
    return path


def plot_profiles(comparison: Comparison, path: Path) -> Path:
    """Performance profiles: the fraction of a group's seeds scoring above each level."""
    plt = _pyplot()
    fig, axis = plt.subplots(figsize=(9, 5.5))
    every = np.concatenate([g.scores for g in comparison.groups])
    levels = np.linspace(every.min(), every.max(), 200)
    for g in comparison.groups:
        scores = np.asarray(g.scores)
        axis.step(levels, (scores[None, :] > levels[:, None]).mean(axis=1), label=g.name)
    axis.set_ylabel("fraction of seeds with score > level")
    axis.legend(fontsize=8)
    _finish(fig, axis, path, "performance profiles", f"level of {comparison.metric}")
    return path


def plot_improvement(comparison: Comparison, path: Path) -> Path:
    """P(row > column) for every pair compared."""
    plt = _pyplot()
    names = [g.name for g in comparison.groups]
    matrix = np.full((len(names), len(names)), np.nan)
    for pair in comparison.pairs:
        i, j = names.index(pair.a), names.index(pair.b)
        matrix[i, j] = pair.probability_of_improvement
        matrix[j, i] = 1.0 - pair.probability_of_improvement
    size = 3 + 0.6 * len(names)
    fig, axis = plt.subplots(figsize=(size + 2, size))
    image = axis.imshow(matrix, vmin=0, vmax=1, cmap="RdBu")
    for (i, j), value in np.ndenumerate(matrix):
        if not np.isnan(value):
            axis.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=8)
    axis.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=8)
    axis.set_yticks(range(len(names)), names, fontsize=8)
    fig.colorbar(image, ax=axis, label="P(row > column)")
    axis.set_title("probability of improvement", fontsize=10)
    fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)
    return path


def _finish(fig: Any, axis: Any, path: Path, title: str, xlabel: str) -> None:
    axis.set_title(title, fontsize=10)
    axis.set_xlabel(xlabel)
    axis.grid(alpha=0.3)
    fig.subplots_adjust(**{**LAYOUT, "left": 0.3})
    fig.savefig(path, dpi=90, bbox_inches="tight")  # a short figure: keep the axis label
    _pyplot().close(fig)


def write_comparison(
    comparison: Comparison, out_dir: Path, title: str = "Comparison"
) -> list[Path]:
    """comparison.md, comparison.json and the three plots in `out_dir`."""
    import json

    out_dir.mkdir(parents=True, exist_ok=True)
    files = [
        plot_intervals(comparison, out_dir / "iqm.png"),
        plot_profiles(comparison, out_dir / "profiles.png"),
        plot_improvement(comparison, out_dir / "improvement.png"),
    ]
    images = "\n".join(f"![{path.stem}]({path.name})" for path in files)
    markdown = render_comparison(comparison, title) + "\n" + images + "\n"
    (out_dir / "comparison.md").write_text(markdown, encoding="utf-8")
    text = json.dumps(comparison.to_json(), indent=2)
    (out_dir / "comparison.json").write_text(text, encoding="utf-8")
    return [out_dir / "comparison.md", out_dir / "comparison.json", *files]
