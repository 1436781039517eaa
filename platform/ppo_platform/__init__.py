"""ppo_platform: declarative PPO experiments.

Light imports only here: `validate` and `plan` must not pay for torch, SB3 or MLflow, and a
process that needs one module (the tracking process) must not pay for the spec models: the
names below load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ppo_platform import tracing as tracing  # first: marks when this process started
from ppo_platform.errors import PlatformError, SpecError, SpecIssue, TrainingError

if TYPE_CHECKING:
    from ppo_platform.spec.experiment import ExperimentSpec
    from ppo_platform.spec.loader import dump_spec, load_spec, load_spec_text, validate_data

__version__ = "0.1.0"

_HOME = {
    "ExperimentSpec": "ppo_platform.spec.experiment",
    "dump_spec": "ppo_platform.spec.loader",
    "load_spec": "ppo_platform.spec.loader",
    "load_spec_text": "ppo_platform.spec.loader",
    "validate_data": "ppo_platform.spec.loader",
}

__all__ = [
    "ExperimentSpec",
    "PlatformError",
    "SpecError",
    "SpecIssue",
    "TrainingError",
    "__version__",
    "dump_spec",
    "load_spec",
    "load_spec_text",
    "validate_data",
]


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
