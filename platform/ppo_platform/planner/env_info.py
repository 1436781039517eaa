"""Look at a registered gymnasium environment the cheap way: its registry entry and its spaces.

Only gymnasium (and numpy) are imported: `plan` must answer in well under a second, so nothing
here imports torch, SB3 or MLflow, and the env is created once, read, played at random for a
moment (`reward_probe`: at most 1,000 steps or 0.5 s) and closed.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ppo_platform.envs.ids import usable_env
from ppo_platform.errors import SpecError, SpecIssue
from ppo_platform.planner.env_cache import cached_env_info, remember_env_info
from ppo_platform.planner.env_model import ActionKind, EnvInfo
from ppo_platform.planner.reward_probe import probe_rewards
from ppo_platform.settings import Settings
from ppo_platform.spec.experiment import ENV_ID_PATTERN

PLAN_SOURCE = "plan"  # how planner errors name their origin ("plan: env.id = ...: ...")


def check_env_id_text(env_id: str) -> None:
    """Refuse ids gymnasium would interpret as 'import this module' (a ':' in the id)."""
    if not re.fullmatch(ENV_ID_PATTERN, env_id):
        raise SpecError(
            [
                SpecIssue(
                    "env.id",
                    "is not a valid environment id.",
                    env_id,
                    fix="use a registered gymnasium id such as CartPole-v1 "
                    "(letters, digits, '.', '_', '-', '/'; no ':').",
                )
            ],
            PLAN_SOURCE,
        )


def _observation(space: Any) -> dict[str, Any]:
    from gymnasium import spaces

    if not isinstance(space, spaces.Box):
        # SB3 one-hot encodes discrete observations and handles Dict spaces; Tuple, Text and
        # the like it cannot feed to a policy at all.
        if isinstance(space, (spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)):
            kind = "discrete"
        else:
            kind = "dict" if isinstance(space, spaces.Dict) else "other"
        return {
            "observation_kind": kind,
            "observation_shape": tuple(space.shape or ()),
            "observation_dtype": str(space.dtype)
            if space.dtype is not None
            else type(space).__name__,
            "observation_low": None,
            "observation_high": None,
            "smallest_finite_range": None,
        }
    image = len(space.shape) == 3 and space.dtype.name == "uint8"
    low = [float(v) for v in space.low.flat if math.isfinite(float(v))]
    high = [float(v) for v in space.high.flat if math.isfinite(float(v))]
    widths = [
        (float(h) - float(lo)) / 2
        for lo, h in zip(space.low.flat, space.high.flat, strict=True)
        if math.isfinite(float(lo)) and math.isfinite(float(h))
    ]
    return {
        "observation_kind": "image" if image else "vector",
        "observation_shape": tuple(int(n) for n in space.shape),
        "observation_dtype": space.dtype.name,
        "observation_low": min(low) if low else None,
        "observation_high": max(high) if high else None,
        "smallest_finite_range": min(widths) if widths else None,
    }


def _action(space: Any) -> dict[str, Any]:
    from gymnasium import spaces

    kinds: list[tuple[type, ActionKind]] = [
        (spaces.Discrete, "discrete"),
        (spaces.Box, "continuous"),
        (spaces.MultiDiscrete, "multi_discrete"),
        (spaces.MultiBinary, "multi_binary"),
    ]
    kind: ActionKind = next((k for cls, k in kinds if isinstance(space, cls)), "other")
    n_actions = int(space.n) if kind == "discrete" else None
    return {
        "action_kind": kind,
        "action_shape": tuple(int(n) for n in (space.shape or ())),
        "n_actions": n_actions,
    }


def _describe(env_id: str, env: Any) -> EnvInfo:
    import gymnasium

    entry = gymnasium.spec(env_id)
    horizon, source = entry.max_episode_steps, "the registry's max_episode_steps"
    if horizon is None:  # envs that truncate themselves, such as the GridWorld
        horizon = getattr(env.unwrapped, "max_episode_steps", None)
        source = "the environment's own max_episode_steps" if horizon else "unknown"
    return EnvInfo(
        env_id=env_id,
        entry_point=str(
            entry.entry_point
            if isinstance(entry.entry_point, str)
            else getattr(entry.entry_point, "__qualname__", entry.entry_point)
        ),
        **_observation(env.observation_space),
        **_action(env.action_space),
        horizon=int(horizon) if isinstance(horizon, int) and horizon > 0 else None,
        horizon_source=source,
        reward_threshold=entry.reward_threshold,
        step_penalty=probe_rewards(env).step_penalty,
    )


def inspect_env(env_id: str, settings: Settings | None = None) -> EnvInfo:
    """Read an env's registry entry and spaces. SpecError (path env.id) if it is unknown or
    unusable: the same env check as validate and run, whose verdict the cache keeps."""
    check_env_id_text(env_id)
    cached = cached_env_info(env_id, settings)
    if cached is not None:
        return cached
    with usable_env(env_id, None, PLAN_SOURCE) as env:
        info = _describe(env_id, env)
    remember_env_info(info, settings)
    return info
