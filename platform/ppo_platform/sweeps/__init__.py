"""Sweeps: a grid of variants x seeds, each a full validated spec, run in parallel processes."""

from ppo_platform.sweeps.expand import GridPoint, SweepMember, expand_sweep, grid_points
from ppo_platform.sweeps.orchestrate import MemberOutcome, SweepResult, run_sweep

__all__ = [
    "GridPoint",
    "MemberOutcome",
    "SweepMember",
    "SweepResult",
    "expand_sweep",
    "grid_points",
    "run_sweep",
]
