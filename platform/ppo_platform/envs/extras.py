"""Which extra of ppo-platform installs what an environment needs (for fix texts)."""

from __future__ import annotations

from functools import cache
from typing import Any

# Entry-point prefixes (gymnasium's registry) or id prefixes -> the extra that installs them.
_EXTRAS = (
    ("gymnasium.envs.mujoco", "mujoco"),
    ("gymnasium.envs.box2d", "box2d"),
    ("ale_py", "atari"),
    ("ALE/", "atari"),
)
MUJOCO_IDS = (
    "Ant",
    "HalfCheetah",
    "Hopper",
    "Humanoid",
    "HumanoidStandup",
    "InvertedDoublePendulum",
    "InvertedPendulum",
    "Pusher",
    "Reacher",
    "Swimmer",
    "Walker2d",
)


def extra_for(env_id: str, entry_point: Any = None) -> str | None:
    """The extra (`mujoco`, `atari`, `box2d`) that makes `env_id` creatable, if one does."""
    if entry_point is None:
        import gymnasium

        spec = gymnasium.registry.get(env_id)
        entry_point = spec.entry_point if spec is not None else None
    where = entry_point if isinstance(entry_point, str) else ""
    for prefix, extra in _EXTRAS:
        if where.startswith(prefix) or env_id.startswith(prefix):
            return extra
    if env_id.split("-v")[0] in MUJOCO_IDS:
        return "mujoco"
    return None


# The module each extra installs (what `extra_installed` looks for).
EXTRA_MODULES = {"mujoco": "mujoco", "atari": "ale_py", "box2d": "Box2D"}


def extra_installed(env_id: str, entry_point: Any = None) -> bool:
    """True unless `env_id` needs an extra whose module is not installed here."""
    extra = extra_for(env_id, entry_point)
    return extra is None or _installed(EXTRA_MODULES[extra])


@cache
def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def install_hint(env_id: str, entry_point: Any = None) -> str:
    """`pip install 'ppo-platform[EXTRA]'` for `env_id`, or a general hint."""
    extra = extra_for(env_id, entry_point)
    if extra:
        return f"pip install 'ppo-platform[{extra}]' (installs what {env_id} needs)"
    return "install the package the message names"
