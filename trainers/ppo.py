"""PPO trainers built on stable-baselines3."""

from __future__ import annotations

from stable_baselines3 import PPO

from .reporting import UpdateReportingMixin


class MonitoredPPO(UpdateReportingMixin, PPO):
    """SB3 PPO (clipped surrogate) whose update metrics reach listeners in the same update."""
