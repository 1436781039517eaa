"""The run plot now lives in `ppo_platform.tracking.plots` (rendered by the tracking process)."""

from ppo_platform.tracking.plots import PLOTTED_METRICS, plot_training_curves

__all__ = ["PLOTTED_METRICS", "plot_training_curves"]
