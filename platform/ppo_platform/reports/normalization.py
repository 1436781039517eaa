"""Scores on one scale across envs, for aggregate views: 0 = a random policy, 1 = solved.

    normalized = (return - random) / (solved - random)

The levels, per env the platform ships specs for (docs/guides/comparing-runs.md lists them
with their sources). Random levels were measured here with a uniformly random policy
(`env.action_space.sample()`, 100 episodes, 20 for HalfCheetah and Breakout); solved levels
are gymnasium's `reward_threshold` where it has one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ScoreLevels:
    random: float
    solved: float
    source: str


LEVELS: dict[str, ScoreLevels] = {
    "CartPole-v1": ScoreLevels(25.0, 475.0, "random: measured 24.96; solved: reward_threshold"),
    "Pendulum-v1": ScoreLevels(
        -1197.0, -200.0, "random: measured -1197.18; solved: no threshold, -200 as rl-zoo's tuned"
    ),
    "HalfCheetah-v5": ScoreLevels(-281.0, 4800.0, "random: measured -280.68; solved: threshold"),
    "ALE/Breakout-v5": ScoreLevels(
        1.7, 30.5, "Atari human-normalised levels (Mnih et al., 2015); measured random 1.2"
    ),
    "ppo_platform/GridWorld-v0": ScoreLevels(
        0.12, 0.95, "random: measured 0.12; solved: the 6-step shortest path (5 x -0.01 + 1)"
    ),
}


def normalize(env_id: str, scores: Sequence[float] | np.ndarray) -> np.ndarray:
    """`scores` of `env_id` on the random = 0, solved = 1 scale; ValueError for an env
    without documented levels."""
    levels = LEVELS.get(env_id)
    if levels is None:
        raise ValueError(
            f"no random and solved levels for env {env_id!r}: known are {sorted(LEVELS)}. "
            "Compare its raw returns on their own (one env needs no normalisation)."
        )
    return (np.asarray(scores, dtype=float) - levels.random) / (levels.solved - levels.random)


def normalize_tasks(
    scores: Mapping[str, Sequence[float] | np.ndarray],
) -> dict[str, np.ndarray]:
    """Per-env scores normalised when they span several envs; one env stays raw."""
    if len(scores) <= 1:
        return {env: np.asarray(values, dtype=float) for env, values in scores.items()}
    return {env: normalize(env, values) for env, values in scores.items()}
