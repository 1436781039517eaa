"""The one check that an env id names a registered gymnasium environment, and its suggestions.

`run` and `plan` both call `check_env_id`, so the same typo gets the same answer from both.
gymnasium is imported inside the functions: `validate` imports spec/ and must stay fast.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from ppo_platform.errors import SpecError, SpecIssue

MAX_SUGGESTIONS = 3


def registered_env_ids() -> list[str]:
    """Every id gymnasium knows, including our own (ppo_platform/GridWorld-v0)."""
    import gymnasium

    from trainers.envs import register_envs

    register_envs()
    return list(gymnasium.registry)


def close_env_ids(env_id: str, known: Iterable[str]) -> list[str]:
    """Up to three registered ids close to `env_id`: case-insensitive near matches first, then
    ids that contain it (so `cartpole` finds CartPole-v0 and CartPole-v1)."""
    known = list(known)
    lowered = {name.lower(): name for name in known}
    needle = env_id.lower()
    close = [lowered[m] for m in difflib.get_close_matches(needle, list(lowered), n=3)]
    close += [name for name in known if needle in name.lower() and name not in close]
    return close[:MAX_SUGGESTIONS]


def unknown_env_error(env_id: str, known: Iterable[str], source: str | None = None) -> SpecError:
    """The SpecError (field env.id) for an id gymnasium does not know, with close matches."""
    close = close_env_ids(env_id, known)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    return SpecError(
        [
            SpecIssue(
                "env.id",
                "is not a registered gymnasium environment.",
                env_id,
                fix=f"{hint}Use a registered id such as CartPole-v1 "
                "(gymnasium.registry lists them).",
            )
        ],
        source,
    )


def check_env_id(env_id: str, source: str | None = None) -> None:
    """Raise a SpecError naming env.id, the value and close matches if `env_id` is unknown."""
    known = registered_env_ids()
    if env_id not in known:
        raise unknown_env_error(env_id, known, source)
