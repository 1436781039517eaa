"""Named wrappers that env packages register (`register_wrapper`), beside the built-in vocabulary.

An env package calls `register_wrapper("my_pkg.shaping", factory)` on import; a spec then lists
`{name: my_pkg.shaping, params: {...}}` in `env.wrappers`. The spec names data, never code: the
name is looked up here, among what the operator's packages registered.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ppo_platform.spec.wrappers import PACKAGE_WRAPPER_PATTERN

WrapperFactory = Callable[..., Any]  # (env, **params) -> env
_wrappers: dict[str, WrapperFactory] = {}


def register_wrapper(name: str, factory: WrapperFactory) -> None:
    """Make `factory(env, **params)` available to specs as `env.wrappers: [{name: NAME}]`.

    `name` is dotted (`my_pkg.wrapper`) so it cannot collide with the built-in vocabulary;
    registering the same name again replaces it (a package may be imported twice).
    """
    if not re.fullmatch(PACKAGE_WRAPPER_PATTERN, name):
        raise ValueError(
            f"wrapper name {name!r} must be dotted lower-case identifiers, e.g. my_envs.shaping"
        )
    if not callable(factory):
        raise TypeError(f"wrapper {name!r}: the factory must be callable (env, **params) -> env")
    _wrappers[name] = factory


def registered_wrappers() -> dict[str, WrapperFactory]:
    """Wrappers registered by env packages in this process, by name."""
    return dict(_wrappers)
