"""Replaces torch's `clip_grad_norm_` + `Adam.step()` in the PPO update
(`ppo_platform.trainers.stock.
OptimizerStep`): the same arithmetic in fewer calls.

A minibatch step on a small MLP is a few hundred microseconds of arithmetic wrapped in several
milliseconds of dispatch: torch's Adam step walks its parameter groups in Python and updates
the parameters with about ten foreach kernels; `clip_grad_norm_` groups the gradients by device
on every call. `MinibatchStep` zeroes the gradients, backpropagates, clips to the global norm
(the norm before clipping is returned, as `clip_grad_norm_` returns it) and takes one Adam step:
torch's own foreach Adam function on the optimizer's own state, called directly, without
`step()`'s per-call Python (hooks, profiler records, `_init_group`'s walk over every parameter's
state). Bit-equal to `clip_grad_norm_` + `optimizer.step()`. (torch's fused CPU kernel,
`torch._fused_adam_`, is faster still but rounds differently, ~1 ulp per step: a different
trajectory from stock SB3's on the same seed.)

Anything else (a custom optimizer, several parameter groups, a GPU) takes torch's own path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from ..stock import OptimizerStep
from . import privates


def use_foreach_optimizer(optimizer: torch.optim.Optimizer) -> None:
    """Let the optimizer update all parameters per kernel (`foreach`) instead of one by one.

    Same arithmetic as torch's default CPU path, bit for bit, with a fraction of the kernel
    launches; an explicit foreach=False in policy_kwargs is respected.
    """
    for group in optimizer.param_groups:
        if "foreach" in group and group["foreach"] is None:
            group["foreach"] = True


def _plain_adam(optimizer: torch.optim.Optimizer, parameters: list[Tensor]) -> bool:
    """True for a one-group torch Adam on CPU float32 parameters with default options."""
    if type(optimizer) is not torch.optim.Adam or len(optimizer.param_groups) != 1:
        return False
    group = optimizer.param_groups[0]
    plain = not any(
        group.get(key) for key in ("amsgrad", "maximize", "capturable", "differentiable")
    )
    plain = plain and not group.get("decoupled_weight_decay") and not group.get("fused")
    plain = plain and group.get("foreach") is True  # the kernels torch's step would run
    same = len(group["params"]) == len(parameters) and all(
        a is b for a, b in zip(group["params"], parameters, strict=False)
    )
    on_cpu = all(p.device.type == "cpu" and p.dtype == torch.float32 for p in parameters)
    return plain and same and on_cpu and not isinstance(group["lr"], Tensor)


class MinibatchStep(OptimizerStep):
    """Backward, global-norm clip and Adam step for one minibatch, built once per update."""

    def __init__(self, optimizer: torch.optim.Optimizer, parameters: list[Tensor]) -> None:
        super().__init__(optimizer, parameters)
        self.lean = _plain_adam(optimizer, parameters)
        self._state: tuple[list[Tensor], list[Tensor], list[Tensor]] | None = None
        self._count: float | None = None  # the shared Adam step count, once all are equal

    def __call__(self, loss: Tensor, max_grad_norm: float) -> Tensor:
        """Step on `loss`; returns the gradient norm before clipping (a 0-d tensor, no sync)."""
        for parameter in self.parameters:
            parameter.grad = None
        loss.backward()
        return self.with_grads([p.grad for p in self.parameters], max_grad_norm)

    def with_grads(self, grads: Sequence[Tensor | None], max_grad_norm: float) -> Tensor:
        """Step with gradients already computed (`manual.ManualLoss`), in parameters' order."""
        for parameter, grad in zip(self.parameters, grads, strict=True):
            parameter.grad = grad
        if not self.lean or any(g is None for g in grads):
            norm = torch.nn.utils.clip_grad_norm_(self.parameters, max_grad_norm)
            self.optimizer.step()
            return norm
        present: list[Tensor] = list(grads)  # type: ignore[arg-type]  # no None (checked above)
        norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(present, 2.0)), 2.0)
        # clip_grad_norm_'s arithmetic: coefficient max_norm / (norm + 1e-6), at most 1.
        torch._foreach_mul_(present, torch.clamp(max_grad_norm / (norm + 1e-6), max=1.0))
        self._adam(present)
        return norm

    def _adam(self, grads: list[Tensor]) -> None:
        state = self.optimizer.state
        if self._state is None:
            if any(p not in state for p in self.parameters):
                # The first step ever: torch's own lazy creation of the Adam state, as `step()`
                # does it (whose wrapper would import torch's compiler), then the step below.
                first = self.optimizer.param_groups[0]
                self.optimizer._init_group(first, [], [], [], [], [], [])  # type: ignore[attr-defined]
            self._state = (
                [state[p]["exp_avg"] for p in self.parameters],
                [state[p]["exp_avg_sq"] for p in self.parameters],
                [state[p]["step"] for p in self.parameters],
            )
            counts = {float(step.item()) for step in self._state[2]}  # once per update
            self._count = counts.pop() if len(counts) == 1 else None
        exp_avgs, exp_avg_sqs, steps = self._state
        group: dict[str, Any] = self.optimizer.param_groups[0]
        beta1, beta2 = group["betas"]
        with torch.no_grad():  # what Optimizer.step's decorator does
            if self._count is not None and group["weight_decay"] == 0:
                self._count = _foreach_adam(
                    (self.parameters, grads, exp_avgs, exp_avg_sqs, steps),
                    self._count, group["lr"], (beta1, beta2), group["eps"],
                )  # fmt: skip
                return
            privates.multi_tensor_adam()(
                self.parameters, grads, exp_avgs, exp_avg_sqs, [], steps, None, None,
                amsgrad=False, has_complex=False, beta1=beta1, beta2=beta2, lr=group["lr"],
                weight_decay=group["weight_decay"], eps=group["eps"], maximize=False,
                capturable=False, differentiable=False, decoupled_weight_decay=False,
            )  # fmt: skip


def _foreach_adam(
    tensors: tuple[list[Tensor], ...], count: float, lr: float, betas: tuple, eps: float
) -> float:
    """torch's `_multi_tensor_adam` for one CPU group without weight decay: the same kernels
    with the same scalars, but the bias corrections computed once from `count` (the shared step
    count, kept in Python) instead of one `.item()` per parameter. Returns the new count."""
    params, grads, exp_avgs, exp_avg_sqs, steps = tensors
    beta1, beta2 = betas
    torch._foreach_add_(steps, torch.tensor(1.0, device="cpu"), alpha=1.0)
    count += 1
    torch._foreach_lerp_(exp_avgs, grads, 1 - beta1)
    torch._foreach_mul_(exp_avg_sqs, beta2)
    torch._foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)
    step_size = (lr / (1 - beta1**count)) * -1
    bias_correction2_sqrt = (1 - beta2**count) ** 0.5
    exp_avg_sq_sqrt = torch._foreach_sqrt(exp_avg_sqs)
    torch._foreach_div_(exp_avg_sq_sqrt, [bias_correction2_sqrt] * len(params))
    torch._foreach_add_(exp_avg_sq_sqrt, eps)
    torch._foreach_addcdiv_(params, exp_avgs, exp_avg_sq_sqrt, [step_size] * len(params))
    return count
