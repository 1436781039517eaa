"""A notebook user's own env factory, shipped to another process (subproc envs, async
evaluation) by value with cloudpickle, or refused with a clear error if it cannot be.

A factory defined in a notebook (or inside a function) travels by value; one defined at the
top of an importable module travels by reference, so children must be able to import that
module (PYTHONPATH). Only the training process pickles it, for its own children, through a
private pipe: nothing is unpickled from a place a user chose.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from ppo_platform.errors import BadInputError, SpecIssue


def check_shippable(make_env: Callable[[], Any], needed_by: str) -> bytes:
    """`make_env` pickled by value; BadInputError naming `needed_by` if it cannot be."""
    import cloudpickle

    try:
        return bytes(cloudpickle.dumps(make_env))
    except Exception as error:
        raise BadInputError(
            [
                SpecIssue(
                    needed_by,
                    "needs the env factory in another process, and it cannot be pickled: "
                    f"{type(error).__name__}: {error}",
                    getattr(make_env, "__qualname__", repr(make_env)),
                    fix="build everything the factory needs inside it (no open files, locks or "
                    "live connections in its closure), or register the env in a module named "
                    "with --env-package / PPO_PLATFORM_ENV_PACKAGES, or use in-process "
                    "evaluation (evaluation.async: false) and dummy vectorization.",
                )
            ]
        ) from error


def encode_factory(make_env: Callable[[], Any], needed_by: str) -> str:
    """`check_shippable`'s bytes as text (for a JSON line to a child process)."""
    return base64.b64encode(check_shippable(make_env, needed_by)).decode("ascii")


def decode_factory(text: str) -> Callable[[], Any]:
    """The factory the parent encoded (read from the parent's private pipe only)."""
    import cloudpickle

    factory: Callable[[], Any] = cloudpickle.loads(base64.b64decode(text))
    return factory
