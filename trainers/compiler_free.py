"""Build and step optimizers without importing torch's compiler in a process that never compiles.

torch marks an optimizer's methods "never compile" with `torch._disable_dynamo`, which imports
the compiler (`torch._dynamo`: ~1.8 s of CPU, the largest single start-up cost of a training
process, bigger than `import torch`) the first time one of them runs. Building any optimizer
runs one (`add_param_group`), so every training process paid it before its first update, and
a sweep paid it once per worker.

Marking a method "never compile" only matters while torch compiles, and nothing compiles
before `torch._dynamo` is imported. `keep_compiler_unloaded` gives those methods the marker
torch caches on first use (`fn.__dynamo_disable`) in a form that asks: with the compiler not
imported, it calls the method as it is (what torch's wrapper does outside a compiled region);
once anything has imported it, it hands over to torch's own `torch._dynamo.disable`, exactly
as torch would have. Nothing is compiled differently, and no number changes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import torch

# The methods torch wraps with `@torch._disable_dynamo` (recursive) in torch/optim/optimizer.py.
_OPTIMIZER_METHODS = ("add_param_group", "state_dict", "load_state_dict", "zero_grad")
_MARKER = "__dynamo_disable"  # the attribute torch's wrapper caches its disabled function in


def keep_compiler_unloaded() -> None:
    """Mark torch's optimizer methods so that calling them does not import `torch._dynamo`.
    Idempotent; a no-op where the compiler is imported already or torch's wrapper differs."""
    if "torch._dynamo" in sys.modules:
        return
    for name in _OPTIMIZER_METHODS:
        method = getattr(torch.optim.Optimizer, name, None)
        original = getattr(method, "__wrapped__", None)  # torch's wrapper wraps the method
        if original is None or getattr(original, _MARKER, None) is not None:
            continue
        setattr(original, _MARKER, _until_compiler_imported(original))


def _until_compiler_imported(method: Callable[..., Any]) -> Callable[..., Any]:
    """`method` as is while `torch._dynamo` is not imported; torch's disabled form after."""

    def call(*args: Any, **kwargs: Any) -> Any:
        if "torch._dynamo" not in sys.modules:
            return method(*args, **kwargs)
        import torch._dynamo

        disabled = torch._dynamo.disable(method, True, wrapping=False)
        setattr(method, _MARKER, disabled)  # torch's own cache from now on
        return disabled(*args, **kwargs)

    return call
