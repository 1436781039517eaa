"""The private torch and stable-baselines3 names the fast paths use, looked up when asked.

Nothing here is imported at module level: a torch or SB3 release that renames one makes
`missing()` name it, and the switch (`ppo_platform.trainers.fast.switch`) runs the stock path
instead of
an import failing.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any

# (module, dotted attribute path) of every private name used by trainers/fast.
NAMES: tuple[tuple[str, str], ...] = (
    ("torch.optim.adam", "_multi_tensor_adam"),  # optimizer_step: Adam's foreach kernels
    ("torch.optim", "Adam._init_group"),  # optimizer_step: Adam's lazy state creation
    ("torch.optim", "Optimizer.add_param_group.__wrapped__"),  # compiler_free
    ("torch.optim", "Optimizer.zero_grad.__wrapped__"),
    ("torch.optim", "Optimizer.state_dict.__wrapped__"),
    ("torch.optim", "Optimizer.load_state_dict.__wrapped__"),
    ("torch", "_foreach_norm"),  # optimizer_step: clip_grad_norm_ and Adam, by hand
    ("torch", "_foreach_mul_"),
    ("torch", "_foreach_add_"),
    ("torch", "_foreach_lerp_"),
    ("torch", "_foreach_addcmul_"),
    ("torch", "_foreach_sqrt"),
    ("torch", "_foreach_div_"),
    ("torch", "_foreach_addcdiv_"),
    ("torch", "_softmax_backward_data"),  # manual_heads: softmax's backward kernel
    ("torch", "ops.aten.tanh_backward"),  # manual: the activations' and MSE's backward
    ("torch", "ops.aten.threshold_backward"),
    ("torch", "ops.aten.mse_loss_backward"),
    ("torch.distributions", "Distribution._validate_args"),  # distributions: checks off
    ("stable_baselines3.common.vec_env", "DummyVecEnv._save_obs"),  # dummy_vec_env
    ("stable_baselines3.common.vec_env", "DummyVecEnv._obs_from_buf"),
)


def lookup(module: str, path: str) -> Any:
    """`module.path`, imported now; ImportError or AttributeError if it is not there."""
    value: Any = importlib.import_module(module)
    for part in path.split("."):
        value = getattr(value, part)
    return value


@functools.cache
def missing() -> str | None:
    """None when every name in NAMES resolves, else which one does not (checked once)."""
    for module, path in NAMES:
        try:
            lookup(module, path)
        except (ImportError, AttributeError) as error:
            return f"{module}.{path} is not available ({error})"
    return None


@functools.cache
def multi_tensor_adam() -> Callable[..., None]:
    """torch's `_multi_tensor_adam` (the foreach kernels behind `Adam.step`)."""
    function: Callable[..., None] = lookup("torch.optim.adam", "_multi_tensor_adam")
    return function
