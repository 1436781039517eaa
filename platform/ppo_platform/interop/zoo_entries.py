"""Which zoo entry an env id takes, as the zoo decides it, and what to tell the user about it.

The zoo applies its `atari` entry to every Atari game; its MuJoCo entries are tuned on v4,
which the platform applies to v5 (gymnasium's current versions) with a note. An env whose extra
is not installed here is still converted (pure data), with a warning naming the extra.
"""

from __future__ import annotations

import re
from typing import Any

from ppo_platform.envs.extras import extra_for, extra_installed

ATARI_ENTRY = "atari"
_VERSION = re.compile(r"^(?P<base>.+)-v(?P<version>\d+)$")


def is_atari(env_id: str) -> bool:
    """An ALE game: ALE/<Game>-v5, <Game>NoFrameskip-v4 or an id ale_py registered."""
    if env_id.startswith("ALE/") or "NoFrameskip" in env_id:
        return True
    import gymnasium

    spec = gymnasium.registry.get(env_id)
    return spec is not None and "ale_py" in str(spec.entry_point)


def entry_for(document: dict[str, Any], env_id: str) -> tuple[str, tuple[str, ...]]:
    """The entry name to import for `env_id` and a note when it is not the id's own entry."""
    if env_id in document:
        return env_id, ()
    if is_atari(env_id) and ATARI_ENTRY in document:
        return ATARI_ENTRY, (
            f"the zoo's `{ATARI_ENTRY}` entry, which the zoo applies to every Atari game "
            f"(the file has no {env_id} entry).",
        )
    match = _VERSION.match(env_id)
    if match:
        base, version = match["base"], int(match["version"])
        for older in range(version - 1, -1, -1):
            if f"{base}-v{older}" in document:
                return f"{base}-v{older}", (
                    f"the zoo's {base}-v{older} entry applied to {env_id}: the zoo tunes "
                    f"v{older}; v{version} is gymnasium's current version of the same task "
                    "(its numbers may differ a little, see gymnasium's version history).",
                )
    return env_id, ()  # the usual "no entry, did you mean" error follows


def ale_frame_skip(data: dict[str, Any], env_id: str) -> tuple[str, ...]:
    """ALE v5 games skip 4 frames themselves: with the atari wrapper's skip, frameskip 1."""
    env = data.get("env", {})
    atari = [w for w in env.get("wrappers", []) if w.get("name") == "atari"]
    if not atari or not env_id.startswith("ALE/") or atari[0].get("frame_skip", 4) <= 1:
        return ()
    kwargs = env.setdefault("kwargs", {})
    if "frameskip" in kwargs:
        return ()
    kwargs["frameskip"] = 1
    return (
        f"env.kwargs.frameskip is 1: {env_id} skips 4 frames itself, and the atari wrapper "
        "skips (and max-pools) 4 more, as the zoo's NoFrameskip-v4 games expect.",
    )


def missing_extra(env_id: str) -> str | None:
    """A warning if `env_id` needs an extra that is not installed here, else None."""
    extra = extra_for(env_id)
    if extra is None or extra_installed(env_id):
        return None
    return (
        f"warning: {env_id} cannot be created on this machine (the `{extra}` extra is not "
        f"installed): the spec was converted but not checked against the env; pip install "
        f"'ppo-platform[{extra}]' to train it."
    )
