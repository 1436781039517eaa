"""Custom gymnasium environments, registered under the ``ppo_platform/`` namespace."""

from __future__ import annotations

import gymnasium

from trainers.envs.gridworld import ACTION_NAMES, GridWorldEnv

GRIDWORLD_ID = "ppo_platform/GridWorld-v0"

__all__ = ["ACTION_NAMES", "GRIDWORLD_ID", "GridWorldEnv", "register_envs"]


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


register_envs()
