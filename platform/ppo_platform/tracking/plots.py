"""PNG plots of a run's learning curve and PPO health signals (matplotlib, no display needed).

Rendered by the tracking process: matplotlib (a heavy import) is loaded there, never in the
training process.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

Series = Sequence[tuple[int, float]]
# The 2 x 2 panels, row by row: title and (metric, legend) pairs.
PANELS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("Return", (("rollout/ep_rew_mean", "train episodes"), ("eval/mean_reward", "evaluation"))),
    ("Approx KL", (("train/approx_kl", "approx KL"), ("train/approx_kl_post", "post-update KL"))),
    ("Clip fraction", (("train/clip_fraction", "clip fraction"),)),
    ("Explained variance", (("train/explained_variance", "explained variance"),)),
)
# Room for tick labels of up to ~8 characters and the titles, at figsize (11, 7).
LAYOUT = {"left": 0.07, "right": 0.98, "bottom": 0.08, "top": 0.9, "wspace": 0.18, "hspace": 0.25}
# A title's height given, not found: matplotlib otherwise measures every tick label of the axes
# to keep the title clear of ticks on top, which these plots have none of (the same pixels,
# ~10% less of the plot's time).
TITLE_Y = 1.0
# What a resumed run reads back from MLflow so its plot covers the whole run.
PLOTTED_METRICS = tuple(key for _, series in PANELS for key, _ in series)


def plot_training_curves(
    history: Mapping[str, Series],
    path: Path,
    title: str,
    kl_alert: float,
    clip_band: tuple[float, float] = (0.1, 0.3),
) -> Path:
    """Return, approx KL, clip fraction and explained variance against env steps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 7), sharex=True)
    for axis, (label, series) in zip(axes.flat, PANELS, strict=True):
        for key, legend in series:
            points = history.get(key, [])
            if points:
                steps, values = zip(*points, strict=True)
                axis.plot(
                    steps,
                    values,
                    label=legend,
                    marker="o" if key.startswith("eval") else None,
                    markersize=3,
                )
        axis.set_title(label, y=TITLE_Y)
        axis.grid(alpha=0.3)
    axes[0][1].axhline(kl_alert, color="tab:red", linestyle="--", label=f"alert {kl_alert}")
    axes[1][0].axhspan(*clip_band, color="tab:green", alpha=0.1, label="healthy")
    axes[1][1].axhline(0.0, color="tab:red", linestyle="--", linewidth=0.8)
    for axis in axes.flat:
        if axis.get_legend_handles_labels()[0]:
            axis.legend(fontsize=8)
    for axis in axes[1]:
        axis.set_xlabel("env steps")
    fig.suptitle(title)
    # Fixed margins, not tight_layout: that draws the whole figure once more to measure it
    # (about half of the plot's time, on the run's critical path at its end).
    fig.subplots_adjust(**LAYOUT)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
