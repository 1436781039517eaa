"""The comparison report's plots per variant (mean over seeds, min-max band): eval return,
approx KL, post-update KL with clip fraction."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ppo_platform.reports.stats import GYM_WORDS, ScoreWords, SeedRun, Series
from ppo_platform.tracking.plots import TITLE_Y

# Fixed margins, not tight_layout: that draws the whole figure once more to measure it (half
# of the report's CPU, at the end of every sweep). Room for log-scale tick labels (10^-3), the
# axis labels and a 10-point title at figsize (9, 5.5), and (9, 8) with two panels.
LAYOUT = {"left": 0.09, "right": 0.98, "bottom": 0.09, "top": 0.94}
TWO_PANEL_LAYOUT = {"left": 0.09, "right": 0.98, "bottom": 0.065, "top": 0.96, "hspace": 0.08}


def _pyplot() -> Any:
    """matplotlib (a heavy import) with the file-only Agg backend, loaded on first plot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def warm_plotting() -> None:
    """Import matplotlib now (in a background thread while a sweep trains), so building the
    report afterwards costs only its drawing."""
    _pyplot()


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
        _pyplot().rcParams["axes.prop_cycle"].by_key()["color"] * 10, groups.items(), strict=False
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
    groups: dict[str, list[SeedRun]],
    threshold: float | None,
    path: Path,
    title: str,
    words: ScoreWords = GYM_WORDS,
) -> Path:
    """Eval return (an LM sweep: held-out reward) vs env steps (updates): mean over seeds per
    variant, min-max band."""
    fig, axis = _pyplot().subplots(figsize=(9, 5.5))
    _plot_bands(axis, groups, "evals")
    if threshold is not None:
        axis.axhline(
            threshold, color="black", linestyle=":", linewidth=1, label=f"threshold {threshold:g}"
        )
    heading = f"{title}: {words.curve} (mean over seeds, min-max band)"
    _finish(fig, axis, path, heading, words.curve, words.steps)
    return path


def plot_kl(
    groups: dict[str, list[SeedRun]], kl_alert: float | None, path: Path, title: str
) -> Path:
    """Approx KL per update vs env steps: mean over seeds per variant, min-max band."""
    fig, axis = _pyplot().subplots(figsize=(9, 5.5))
    _kl_bands(axis, groups, "approx_kl", kl_alert, "no approx KL logged")
    _finish(
        fig,
        axis,
        path,
        f"{title}: approx KL per update (mean over seeds, min-max band)",
        "approx KL",
    )
    return path


def plot_update_size(
    groups: dict[str, list[SeedRun]],
    kl_alert: float | None,
    drift: float | None,
    path: Path,
    title: str,
) -> Path:
    """Post-update KL (log scale) above clip fraction, per update: mean over seeds, min-max band.

    The post-update KL compares the rollout policy with the policy after all K epochs, so it
    shows how far an update moved even with one full-batch minibatch per epoch.
    """
    plt = _pyplot()
    fig, (kl_axis, clip_axis) = plt.subplots(2, 1, figsize=(9, 8), sharex=True)
    _kl_bands(kl_axis, groups, "approx_kl_post", kl_alert, "no post-update KL logged")
    kl_axis.set_title(
        f"{title}: post-update KL and clip fraction per update", fontsize=10, y=TITLE_Y
    )
    kl_axis.set_ylabel("post-update KL")
    _plot_bands(clip_axis, groups, "clip_fraction")
    if drift is not None:
        clip_axis.axhline(
            drift, color="tab:red", linestyle="--", linewidth=1, label=f"drift {drift:g}"
        )
    clip_axis.set_ylabel("clip fraction")
    clip_axis.set_xlabel("env steps")
    for axis in (kl_axis, clip_axis):
        axis.grid(alpha=0.3)
        if axis.get_legend_handles_labels()[0]:
            axis.legend(fontsize=8)
    fig.subplots_adjust(**TWO_PANEL_LAYOUT)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def _kl_bands(
    axis: Any, groups: dict[str, list[SeedRun]], key: str, kl_alert: float | None, empty: str
) -> None:
    """A KL metric's bands on a log scale with the alert line, or `empty` if none was logged."""
    if not _plot_bands(axis, groups, key):
        axis.text(0.5, 0.5, empty, ha="center", va="center", transform=axis.transAxes)
        return
    axis.set_yscale("log")
    if kl_alert is not None:
        axis.axhline(
            kl_alert, color="tab:red", linestyle="--", linewidth=1, label=f"alert {kl_alert:g}"
        )


def _finish(
    fig: Any, axis: Any, path: Path, title: str, ylabel: str, xlabel: str = "env steps"
) -> None:
    axis.set_title(title, fontsize=10, y=TITLE_Y)
    axis.set_xlabel(xlabel)
    axis.set_ylabel(ylabel)
    axis.grid(alpha=0.3)
    if axis.get_legend_handles_labels()[0]:
        axis.legend(fontsize=8)
    fig.subplots_adjust(**LAYOUT)
    fig.savefig(path, dpi=90)
    _pyplot().close(fig)
