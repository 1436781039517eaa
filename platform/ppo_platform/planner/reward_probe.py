"""Probe an env's reward structure by playing it at random for a moment (no name lookups).

The planner works from an env's properties. Its spaces say nothing about the reward, so
`probe_rewards` plays uniformly random actions (seeded: the same answer every time) for at most
`PROBE_STEPS` steps or `PROBE_SECONDS` of wall time and reports the one property a rule uses:

* a **time penalty**: every step that did not end the episode paid the same negative reward
  (Acrobot-v1 and MountainCar-v0 pay -1 until the goal ends the episode). The return then
  counts the steps to the goal: the credit for reaching it must travel back over the whole way,
  which decides gamma, the GAE span and the rollout length (`derive_rules`, `sizing`).

CartPole-v1 (+1 per step: the episode's end is the failure), Pendulum-v1 and LunarLander-v3
(rewards that vary from step to step) are not time penalties.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

PROBE_STEPS = 1_000  # random steps at most (~0.05 s for a classic-control env)
PROBE_SECONDS = 0.5  # and at most this long, whatever one step costs
MIN_STEPS = 50  # fewer non-terminal steps than this say nothing: no verdict


@dataclass(frozen=True)
class RewardProbe:
    """What random play showed about the reward."""

    step_penalty: float | None  # the same negative reward on every non-final step, else None
    steps: int  # random steps played
    episodes_ended: int  # episodes that terminated or were truncated within the probe


def time_penalty(rewards: list[float]) -> float | None:
    """The reward every step paid, if it is one negative constant; else None.

    `rewards` are the rewards of the steps that did not end an episode (the final step of a
    goal-reaching episode may pay something else, e.g. Acrobot-v1's 0 at the goal)."""
    if len(rewards) < MIN_STEPS:
        return None
    first = rewards[0]
    if first >= 0 or not math.isfinite(first):
        return None
    return first if all(r == first for r in rewards) else None


def probe_rewards(
    env: Any, steps: int = PROBE_STEPS, seconds: float = PROBE_SECONDS
) -> RewardProbe:
    """Play `env` with seeded random actions; never raises (a failing env gives no verdict)."""
    non_final: list[float] = []
    played = ended = 0
    try:
        env.action_space.seed(0)
        env.reset(seed=0)
        deadline = time.perf_counter() + seconds
        while played < steps and time.perf_counter() < deadline:
            _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            played += 1
            if terminated or truncated:
                ended += 1
                env.reset()
            else:
                non_final.append(float(reward))
    except Exception:  # a probe must never break a plan: no verdict instead
        return RewardProbe(None, played, ended)
    return RewardProbe(time_penalty(non_final), played, ended)


# --- what a time penalty changes in the plan (used by `sizing` and `derive_rules`) -----------

PENALTY_GAMMA = 0.99  # discount horizon 1/(1 - gamma) = 100 steps: the way to a distant goal
PENALTY_LAMBDA = 0.95  # the usual GAE(0.95): credit travels back ~17 steps per update
GAE_SPAN_FRACTION = 6  # the GAE span 1/(1 - gamma*lambda) should be at most ~T/6


def penalty_rollout_steps() -> int:
    """The shortest power-of-two T whose GAE span at (PENALTY_GAMMA, PENALTY_LAMBDA) is <= T/6."""
    span = 1 / (1 - PENALTY_GAMMA * PENALTY_LAMBDA)
    return 2 ** math.ceil(math.log2(GAE_SPAN_FRACTION * span))


def penalty_gamma_reason(penalty: float) -> str:
    return (
        f"random play paid {penalty:g} on every step (a time penalty): the return counts the "
        "steps to the goal, and the value must tell a goal 80 steps away from one 200 steps "
        "away, so the discount horizon is the longest the planner uses, 1/(1-gamma) = 100 "
        "steps, not a tenth of the episode limit"
    )


def penalty_reward_reason(penalty: float, gamma: float) -> str:
    return (
        f"random play paid {penalty:g} on every step (a time penalty): the discounted return "
        f"grows to about {penalty:g} / (1 - gamma) = {penalty / (1 - gamma):.0f} before the "
        "goal is found; dividing rewards by a running std of the return keeps the critic's "
        "targets of order 1 (rl-baselines3-zoo normalizes its time-penalty classic-control "
        "entries too)"
    )
