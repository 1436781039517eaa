"""Derivation rules for the policy network and its exploration: `derive_x(basis) -> Choice`.

Split from `derive_rules` (same contract): the layers and activation follow the use case; gSDE
is on for Gaussian policies (continuous actions), off otherwise.
"""

from __future__ import annotations

from ppo_platform.planner.derive_rules import Choice
from ppo_platform.planner.sizing import Basis
from ppo_platform.planner.use_cases import ATARI


def derive_net_arch(b: Basis) -> Choice:
    reason = (
        "the Nature CNN's 512 features feed the policy and value heads directly"
        if b.case is ATARI
        else "two small hidden layers (SB3's default) are plenty for low-dimensional observations"
    )
    return Choice("policy.net_arch", list(b.case.net_arch), reason)


SDE_SAMPLE_FREQ = 4  # steps between gSDE noise draws (rl-baselines3-zoo's tuned value)


def derive_use_sde(b: Basis) -> Choice:
    if not b.case.use_sde:
        reason = "the policy's own sampling explores (categorical: sampled actions; Gaussian: "
        reason += "independent noise per step, SB3's default)"
        return Choice("policy.use_sde", False, reason)
    reason = (
        "generalized state-dependent exploration (gSDE): the noise is a function of the state, "
        f"redrawn every {SDE_SAMPLE_FREQ} steps, so exploration is smooth in time instead of "
        "white noise that a motor or pendulum averages out; rl-baselines3-zoo's tuned "
        "continuous-control entries use it"
    )
    return Choice("policy.use_sde", True, reason)


def derive_sde_sample_freq(b: Basis) -> Choice:
    if not b.case.use_sde:
        return Choice("policy.sde_sample_freq", -1, "unused without gSDE")
    return Choice(
        "policy.sde_sample_freq",
        SDE_SAMPLE_FREQ,
        f"a new exploration matrix every {SDE_SAMPLE_FREQ} steps: long enough to move "
        "the system, short enough to explore several directions per episode",
    )


def derive_activation(b: Basis) -> Choice:
    reason = "as in the Nature CNN" if b.case is ATARI else "SB3's default for MLP policies"
    return Choice("policy.activation", b.case.activation, reason)
