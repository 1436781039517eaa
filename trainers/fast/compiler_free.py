"""Replaces torch's "never compile" wrappers on the optimizer the trainer builds, so that building
and saving it does not import torch's compiler in a process that never compiles.

torch marks an optimizer's methods "never compile" with `torch._disable_dynamo`, which imports
the compiler (`torch._dynamo`: ~1.8 s of CPU, the largest single start-up cost of a training
process, bigger than `import torch`) the first time one of them runs. Building any optimizer
runs one (`add_param_group`), so every training process paid it before its first update.

Marking a method "never compile" only matters while torch compiles, and nothing compiles before
`torch._dynamo` is imported. `build_compiler_free` builds one optimizer whose four wrapped
methods are bound, on that instance only, to a function that asks: with the compiler not
imported, it calls torch's method as it is (what torch's wrapper does outside a compiled
region); once anything has imported the compiler, it calls torch's own wrapper. Nothing else in
the process changes, nothing is compiled differently, and no number changes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import MethodType
from typing import Any

import torch

# The methods torch wraps with `@torch._disable_dynamo` in torch/optim/optimizer.py.
_WRAPPED_METHODS = ("add_param_group", "state_dict", "load_state_dict", "zero_grad")


def build_compiler_free(
    optimizer_class: type[torch.optim.Optimizer], *args: Any, **kwargs: Any
) -> torch.optim.Optimizer:
    """`optimizer_class(*args, **kwargs)`, its wrapped methods bound to `_until_compiler_imported`
    on this instance. A method the class overrides, or one torch no longer wraps, stays as is."""
    optimizer = optimizer_class.__new__(optimizer_class)
    for name in _WRAPPED_METHODS:
        wrapped: Callable[..., Any] | None = getattr(torch.optim.Optimizer, name, None)
        original = getattr(wrapped, "__wrapped__", None)  # torch's wrapper wraps the method
        if wrapped is None or original is None or getattr(optimizer_class, name) is not wrapped:
            continue
        bound = MethodType(_until_compiler_imported(original, wrapped), optimizer)
        setattr(optimizer, name, bound)
    optimizer.__init__(*args, **kwargs)  # type: ignore[misc]
    return optimizer


def _until_compiler_imported(
    original: Callable[..., Any], wrapped: Callable[..., Any]
) -> Callable[..., Any]:
    """`original` as is while `torch._dynamo` is not imported; torch's `wrapped` after."""

    def call(self: torch.optim.Optimizer, *args: Any, **kwargs: Any) -> Any:
        if "torch._dynamo" not in sys.modules:
            return original(self, *args, **kwargs)
        return wrapped(self, *args, **kwargs)

    return call
