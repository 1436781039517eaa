"""Custom gymnasium environments, registered under the ``ppo_platform/`` namespace."""

from __future__ import annotations

import gymnasium

from ppo_platform.envs.own.crash import CrashEnv
from ppo_platform.envs.own.gridworld import ACTION_NAMES, GridWorldEnv

GRIDWORLD_ID = "ppo_platform/GridWorld-v0"
# Fails on purpose (env.kwargs mode: raise | kill): tests of how failed jobs are handled.
CRASH_TEST_ID = "ppo_platform/CrashTest-v0"

__all__ = [
    "ACTION_NAMES",
    "CRASH_TEST_ID",
    "GRIDWORLD_ID",
    "CrashEnv",
    "GridWorldEnv",
    "register_envs",
]


def register_envs() -> None:
    """Register the platform's environments with gymnasium; safe to call repeatedly."""
    if GRIDWORLD_ID not in gymnasium.registry:
        # GridWorldEnv truncates itself, so no extra TimeLimit wrapper. gymnasium's EnvCreator
        # protocol wants a bare **kwargs signature; a class with typed keywords works at runtime.
        gymnasium.register(
            id=GRIDWORLD_ID,
            entry_point=GridWorldEnv,  # type: ignore[arg-type]
            max_episode_steps=None,
        )
    if CRASH_TEST_ID not in gymnasium.registry:
        gymnasium.register(id=CRASH_TEST_ID, entry_point=CrashEnv)  # type: ignore[arg-type]


register_envs()
