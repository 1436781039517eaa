"""Comparison reports of sweeps: statistics, loading from MLflow, markdown and plots."""

from ppo_platform.reports.load import build_report, load_runs, publish_report
from ppo_platform.reports.stats import SeedRun, SweepReport, VariantSummary, default_threshold

__all__ = [
    "SeedRun",
    "SweepReport",
    "VariantSummary",
    "build_report",
    "default_threshold",
    "load_runs",
    "publish_report",
]
