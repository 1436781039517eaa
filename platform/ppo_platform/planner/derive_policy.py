"""Derivation rules for the policy network and its exploration: `derive_x(basis) -> Choice`.

Split from `derive_rules` (same contract): the layers and activation follow the use case; gSDE
is on for Gaussian policies (continuous actions), off otherwise.
"""

from __future__ import annotations

import math

from ppo_platform.planner.derive_rules import Choice
from ppo_platform.planner.sizing import Basis
from ppo_platform.planner.use_cases import ATARI

FRAME_STACK = 4  # the Nature CNN's input: the last 4 frames (Mnih et al. 2015), as the zoo


def derive_wrappers(b: Basis) -> Choice:
    """ALE games get SB3's Atari preprocessing and 4 stacked frames; other image envs the
    frame stack; everything else no wrappers."""
    if b.case is not ATARI:
        return Choice("env.wrappers", [], "the env's observations feed the policy as they are")
    stack = {"name": "frame_stack", "n": FRAME_STACK}
    if _is_ale(b):
        return Choice(
            "env.wrappers",
            [{"name": "atari"}, stack],
            "SB3's AtariWrapper (as rl-baselines3-zoo and the PPO paper): up to 30 no-ops on "
            "reset, 4 frames per action, a lost life ends the episode, fire on reset, 84x84 "
            f"grayscale, rewards clipped to their sign; then the last {FRAME_STACK} frames "
            "stacked, so the CNN sees motion (scores are recorded before the clipping)",
        )
    return Choice(
        "env.wrappers",
        [stack],
        f"the last {FRAME_STACK} frames stacked so the CNN sees motion; add resize/grayscale "
        "wrappers if the frames are large",
    )


# ALE v5 skips 4 frames and repeats actions (p 0.25) itself; the atari wrapper skips (and
# max-pools) instead, as for the NoFrameskip-v4 games the published PPO curves use.
ALE_KWARGS = {"frameskip": 1, "repeat_action_probability": 0.0}


def _is_ale(b: Basis) -> bool:
    return b.info.entry_point.startswith("ale_py") or b.info.env_id.startswith("ALE/")


def derive_env_kwargs(b: Basis) -> Choice:
    if b.case is not ATARI or not _is_ale(b):
        return Choice("env.kwargs", {}, "the env's own defaults")
    return Choice(
        "env.kwargs",
        dict(ALE_KWARGS),
        "the atari wrapper skips 4 frames (max-pooling the last two), so the game itself "
        "must not skip too (v5 defaults to 4: 16 frames per action); no sticky actions, "
        "as in the NoFrameskip-v4 games of the published PPO curves (v5's default is 0.25)",
    )


def derive_net_arch(b: Basis) -> Choice:
    reason = (
        "the Nature CNN's 512 features feed the policy and value heads directly"
        if b.case is ATARI
        else b.case.policy_reason
        or "two small hidden layers (SB3's default) are plenty for low-dimensional observations"
    )
    return Choice("policy.net_arch", list(b.case.net_arch), reason)


def derive_log_std_init(b: Basis) -> Choice:
    if b.case.log_std_init == 0.0:
        return Choice("policy.log_std_init", 0.0, "SB3's default: action noise std 1 at the start")
    std = math.exp(b.case.log_std_init)
    reason = f"action noise std {std:.2g} at the start (as {b.case.source})"
    return Choice("policy.log_std_init", b.case.log_std_init, reason)


def derive_ortho_init(b: Basis) -> Choice:
    if b.case.ortho_init:
        return Choice("policy.ortho_init", True, "SB3's default orthogonal initialization")
    return Choice(
        "policy.ortho_init", False, f"PyTorch's default initialization (as {b.case.source})"
    )


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


def derive_evaluation_deterministic(b: Basis) -> Choice:
    if b.case is not ATARI:
        return Choice("evaluation.deterministic", True, "the greedy policy's return is the result")
    return Choice(
        "evaluation.deterministic",
        False,
        "sampled actions, as rl-baselines3-zoo evaluates Atari games: a greedy policy that never "
        "presses FIRE after a lost life plays on until the time limit (108,000 frames per "
        "episode)",
    )


def derive_activation(b: Basis) -> Choice:
    reason = "as in the Nature CNN" if b.case is ATARI else "SB3's default for MLP policies"
    if b.case.activation == "relu" and b.case is not ATARI:
        reason = f"as {b.case.source}"
    return Choice("policy.activation", b.case.activation, reason)
