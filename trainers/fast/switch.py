"""The one switch of the fast paths: on, unless `PPO_PLATFORM_FAST_PATHS=0`, a torch or
stable-baselines3 version the equality tests do not cover, or a private name they need missing.

Read where a run starts (a model is set up, an env is built), never at import. The stock path
needs no version gate: it uses only public SB3 and torch.
"""

from __future__ import annotations

import functools
import logging
import os
from dataclasses import dataclass

from ..errors import TrainerError
from . import privates

ENV_VAR = "PPO_PLATFORM_FAST_PATHS"
# The versions tests/trainers_tests/fast proves bit-equal to stock: the pair the Makefile
# installs. Outside them the stock path runs (docs/guides/fast-paths.md says how to widen).
COVERED_TORCH = ("2.13.0",)
COVERED_SB3 = ("2.9.2",)
_ON_VALUES = ("1", "on", "true", "yes")
_OFF_VALUES = ("0", "off", "false", "no")

logger = logging.getLogger("ppo_platform.trainers.fast")
FIX = "set it to 1 (fast paths, the default) or 0 (stock stable-baselines3 and torch), or unset it."


class FastPathsValueError(TrainerError, ValueError):
    """`PPO_PLATFORM_FAST_PATHS` holds a value that is neither on nor off."""

    def __init__(self, value: str) -> None:
        self.value = value
        super().__init__(f"{ENV_VAR}={value!r} is neither on nor off: {FIX}")


@dataclass(frozen=True)
class FastPaths:
    """Whether a run's fast paths are on, and why not when they are off."""

    on: bool
    reason: str = ""

    def describe(self) -> str:
        """`on`, or `off (reason)`: what a run records."""
        return "on" if self.on else f"off ({self.reason})"


def fast_paths() -> FastPaths:
    """The switch as it stands now: the environment variable, then the version gate.

    Raises FastPathsValueError for a value of the variable that is neither on nor off."""
    value = os.environ.get(ENV_VAR, "").strip().lower()
    if value in _OFF_VALUES:
        return FastPaths(False, f"{ENV_VAR}={value}")
    if value and value not in _ON_VALUES:
        raise FastPathsValueError(value)
    return _gate()


@functools.cache
def _gate() -> FastPaths:
    """The version gate and the private names, checked once per process and said once."""
    problem = _version_problem() or privates.missing()
    if problem is None:
        return FastPaths(True)
    logger.warning("fast paths off, stock stable-baselines3 and torch run: %s", problem)
    return FastPaths(False, problem)


def _version_problem() -> str | None:
    import stable_baselines3
    import torch

    torch_version = torch.__version__.split("+")[0]
    sb3_version = stable_baselines3.__version__
    if torch_version in COVERED_TORCH and sb3_version in COVERED_SB3:
        return None
    return (
        f"torch {torch_version} with stable-baselines3 {sb3_version} is outside the versions "
        f"the equality tests cover (torch {', '.join(COVERED_TORCH)}; stable-baselines3 "
        f"{', '.join(COVERED_SB3)})"
    )
