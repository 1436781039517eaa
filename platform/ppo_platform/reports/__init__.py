"""Comparison reports of sweeps: statistics, loading from MLflow, markdown and plots."""

from ppo_platform.reports.load import REPORT_KEYS, build_report, load_runs
from ppo_platform.reports.stats import SeedRun, SweepReport, VariantSummary, default_threshold

__all__ = [
    "REPORT_KEYS",
    "SeedRun",
    "SweepReport",
    "VariantSummary",
    "build_report",
    "default_threshold",
    "load_runs",
]
