"""Rollout collection without per-step overhead that changes no number.

SB3's `collect_rollouts` runs the policy once per env step. Two costs there are pure overhead:
autograd bookkeeping (SB3 uses `no_grad`; `inference_mode` also skips version counters and view
tracking) and torch.distributions' argument validation (a check of every probability vector per
step). `LeanRolloutMixin` collects under both switched off: the same kernels in the same order,
the same random draws, so the rollout buffer is bit-for-bit what stock SB3 collects (asserted in
tests/trainers_tests/test_rollout.py). Callbacks, the episode-info buffer and the tracking rows
see exactly what they see in SB3.
"""

from __future__ import annotations

from typing import Any

import torch


class LeanRolloutMixin:
    """For an SB3 on-policy algorithm: `collect_rollouts` in inference mode, unvalidated."""

    def collect_rollouts(self, *args: Any, **kwargs: Any) -> bool:
        from .manual import ManualLoss
        from .ppo import distribution_checks_off  # ppo imports this module

        policy = self.policy  # type: ignore[attr-defined]
        manual = ManualLoss.build(policy)
        with distribution_checks_off(), torch.inference_mode():
            if manual is None:
                return super().collect_rollouts(*args, **kwargs)  # type: ignore[misc, no-any-return]
            policy.forward = manual.forward  # the policy's own forward, minus its overhead
            try:
                return super().collect_rollouts(*args, **kwargs)  # type: ignore[misc, no-any-return]
            finally:
                del policy.forward
