"""PPO policy objectives (clipped surrogate, KL penalty) and their diagnostics.

Masked, token-level losses (the contract in docs/guides/language-models.md): ratio in log
space, the full pessimistic min(rA, clip(r)A), token- or sequence-mean reduction, and validated
inputs so a bad batch fails loudly instead of training on NaN. Torch only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, Literal

import torch
from torch import Tensor

from ppo_platform.trainers.errors import TrainerError

Reduction = Literal["token_mean", "sequence_mean"]
_REDUCTIONS: tuple[str, ...] = ("token_mean", "sequence_mean")
BETA_MIN, BETA_MAX = 1e-8, 1e8
_QUANTILE_NAMES = ("min", "p01", "p50", "p99", "max")
_QUANTILE_LEVELS = (0.0, 0.01, 0.5, 0.99, 1.0)


class LossError(TrainerError, ValueError):
    """Invalid input to a PPO loss; the message names the argument, the value and the fix."""


@dataclass(frozen=True)
class PolicyLossOutput:
    """Loss to backpropagate plus detached diagnostics over the valid (masked-in) entries.

    The diagnostics are computed on first read (then kept): a hot loop that reads them once
    per update, batched over its minibatches (`minibatch_diagnostics`), pays no kernel per step.
    """

    loss: Tensor
    _log_ratio: Tensor = field(repr=False)
    _all_ratios: Tensor = field(repr=False)
    _valid: Tensor | None = field(repr=False)
    clip_epsilon: float
    clip_epsilon_high: float | None = None  # None: symmetric, [1 - eps, 1 + eps]

    def outside_clip_range(self, ratios: Tensor) -> Tensor:
        """Which ratios lie outside [1 - clip_epsilon, 1 + clip_epsilon_high]."""
        if self.clip_epsilon_high is None:
            return (ratios - 1).abs() > self.clip_epsilon
        return (ratios < 1 - self.clip_epsilon) | (ratios > 1 + self.clip_epsilon_high)

    @cached_property
    def approx_kl(self) -> Tensor:
        """k3 = mean((r - 1) - log r), a token mean whatever the loss's reduction."""
        with torch.no_grad():
            return reduce_masked(
                (self._all_ratios - 1) - self._log_ratio, self._valid, "token_mean"
            )

    @property
    def clipped_entries(self) -> Tensor:
        """Bool, the inputs' shape: valid entries whose ratio lies outside the clip range."""
        with torch.no_grad():
            outside = self.outside_clip_range(self._all_ratios)
            return outside if self._valid is None else outside & self._valid

    @cached_property
    def clip_fraction(self) -> Tensor:
        """mean(r outside the clip range) over the valid entries: |r - 1| > clip_epsilon when
        the range is symmetric."""
        with torch.no_grad():
            clipped = self.outside_clip_range(self._all_ratios).to(self._all_ratios.dtype)
            return reduce_masked(clipped, self._valid, "token_mean")

    @property
    def ratio(self) -> Tensor:
        """Detached ratios of the valid entries, 1-D (for quantiles).

        Built on read: boolean indexing syncs with the device, so a hot loop that never
        looks at it never pays for it.
        """
        if self._valid is None:
            return self._all_ratios.reshape(-1)
        return self._all_ratios[self._valid]


def minibatch_diagnostics(outputs: list[PolicyLossOutput]) -> tuple[Tensor, Tensor]:
    """approx_kl and clip_fraction of each output, as two 1-D tensors, in a few kernels when
    the outputs are unmasked, equally sized and share clip_epsilon (one update's minibatches)."""
    first = outputs[0]
    batchable = all(
        out._valid is None
        and out._all_ratios.shape == first._all_ratios.shape
        and out.clip_epsilon == first.clip_epsilon
        and out.clip_epsilon_high is None
        and "approx_kl" not in out.__dict__  # already computed (e.g. read by target_kl)
        for out in outputs
    )
    if not batchable:
        return (
            torch.stack([out.approx_kl for out in outputs]),
            torch.stack([out.clip_fraction for out in outputs]),
        )
    ratios = torch.stack([out._all_ratios.reshape(-1) for out in outputs])
    log_ratios = torch.stack([out._log_ratio.detach().reshape(-1) for out in outputs])
    approx_kl = ((ratios - 1) - log_ratios).mean(dim=1)
    clip_fraction = ((ratios - 1).abs() > first.clip_epsilon).to(ratios.dtype).mean(dim=1)
    return approx_kl, clip_fraction


def _check_open_unit(name: str, value: float) -> None:
    if not (isinstance(value, (int, float)) and 0.0 < value < 1.0):
        raise LossError(f"{name} must be a number in (0, 1), got {value!r}; PPO uses 0.1-0.3")


def _check_shapes(terms: dict[str, Tensor], mask: Tensor | None, reduction: str) -> None:
    named: dict[str, object] = {**terms, "mask": mask}
    for name, value in named.items():
        if value is not None and not isinstance(value, Tensor):
            raise LossError(
                f"{name} must be a torch.Tensor, got {type(value).__name__}; "
                "wrap it with torch.as_tensor"
            )
    shape = tuple(terms["new_logp"].shape)
    for name, value in named.items():
        if isinstance(value, Tensor) and tuple(value.shape) != shape:
            raise LossError(
                f"{name} has shape {tuple(value.shape)} but new_logp has shape {shape}; "
                "pass one entry per action, all with identical shapes"
            )
    if reduction not in _REDUCTIONS:
        raise LossError(f"reduction must be one of {_REDUCTIONS}, got {reduction!r}")
    if reduction == "sequence_mean" and len(shape) != 2:
        raise LossError(
            f"reduction='sequence_mean' needs 2-D (batch, time) inputs, got shape {shape}; "
            "reshape to (batch, time) or use reduction='token_mean'"
        )


def _check_values(terms: dict[str, Tensor], mask: Tensor | None, valid: Tensor | None) -> None:
    """Mask values, empty mask and finiteness of the selected terms, in one device sync."""
    selected = valid if valid is not None else torch.ones_like(terms["new_logp"], dtype=torch.bool)
    not_binary = selected.new_zeros((), dtype=torch.int64)
    if mask is not None and mask.dtype != torch.bool:
        not_binary = ((mask != 0) & (mask != 1)).sum()
    flags = [not_binary, selected.sum()]
    flags += [(selected & ~torch.isfinite(t)).sum() for t in terms.values()]
    n_not_binary, n_valid, *n_bad = torch.stack([f.to(torch.int64) for f in flags]).tolist()
    if mask is not None and n_not_binary:
        raise LossError(
            f"mask has {n_not_binary} value(s) other than 0/1 (dtype {mask.dtype}); "
            "pass a bool mask, True for valid actions"
        )
    if n_valid == 0:
        raise LossError(
            "mask selects no entries (or the inputs are empty); "
            "a PPO update needs at least one valid action"
        )
    for (name, tensor), count in zip(terms.items(), n_bad, strict=True):
        if count:
            first = tuple((selected & ~torch.isfinite(tensor)).nonzero()[0].tolist())
            raise LossError(
                f"{name} has {count} non-finite value(s) among the masked-in entries "
                f"(first at index {first}); fix the rollout data or mask those entries out"
            )


def prepare_masked_terms(
    new_logp: Tensor,
    old_logp: Tensor,
    advantages: Tensor,
    mask: Tensor | None,
    reduction: str,
    validate: bool,
) -> tuple[Tensor, Tensor, Tensor | None]:
    """Return (log_ratio, advantages, valid), zeroed outside the mask, after the shape checks
    (and, with validate, the value checks) every policy loss here shares."""
    terms = {"new_logp": new_logp, "old_logp": old_logp, "advantages": advantages}
    _check_shapes(terms, mask, reduction)
    valid = None if mask is None else (mask if mask.dtype == torch.bool else mask != 0)
    if validate:
        _check_values(terms, mask, valid)
    # pi_old and the advantages are frozen targets: gradient flows only through new_logp.
    log_ratio = new_logp - old_logp.detach()
    adv = advantages.detach()
    if valid is not None:
        # Zero the padding before exp and products: NaN * 0 is NaN in values and gradients,
        # while where() sends the unselected side an exact zero gradient.
        log_ratio = torch.where(valid, log_ratio, 0.0)
        adv = torch.where(valid, adv, 0.0)
    return log_ratio, adv, valid


def reduce_masked(values: Tensor, valid: Tensor | None, reduction: str) -> Tensor:
    """Mean over valid tokens, or over sequences of their valid-token means.

    values must already be 0 outside valid (prepare_masked_terms zeroes the inputs there).
    """
    if valid is None:
        return values.mean() if reduction == "token_mean" else values.mean(dim=1).mean()
    weights = valid.to(values.dtype)
    if reduction == "token_mean":
        return values.sum() / weights.sum()
    counts = weights.sum(dim=1)
    row_means = values.sum(dim=1) / counts.clamp(min=1.0)
    # A row without valid tokens has no opinion: it leaves the mean rather than counting as 0.
    has_tokens = (counts > 0).to(values.dtype)
    return (row_means * has_tokens).sum() / has_tokens.sum()


def _output(
    loss: Tensor,
    log_ratio: Tensor,
    ratio: Tensor,
    valid: Tensor | None,
    clip_epsilon: float,
    clip_epsilon_high: float | None = None,
) -> PolicyLossOutput:
    # Diagnostics are always token means: they describe actions, whatever the loss weights.
    return PolicyLossOutput(
        loss, log_ratio.detach(), ratio.detach(), valid, clip_epsilon, clip_epsilon_high
    )


def clipped_policy_loss(
    new_logp: Tensor,
    old_logp: Tensor,
    advantages: Tensor,
    mask: Tensor | None = None,
    *,
    clip_epsilon: float,
    reduction: Reduction = "token_mean",
    validate: bool = True,
    clip_epsilon_high: float | None = None,
) -> PolicyLossOutput:
    """PPO-Clip loss -E[min(r A, clip(r, 1-eps, 1+eps_high) A)], r = exp(new_logp - old_logp).

    Per entry: A >= 0 gives -A min(r, 1 + eps_high), A < 0 gives -A max(r, 1 - eps).
    clip_epsilon_high None: eps_high = eps (symmetric); larger: Clip-Higher (DAPO), more room
    to raise a token's probability than to lower it. mask marks valid actions (bool or 0/1;
    None means all valid). validate=False skips the checks that sync with the device (mask
    values, empty mask, finiteness) in hot loops.
    """
    _check_open_unit("clip_epsilon", clip_epsilon)
    high = clip_epsilon if clip_epsilon_high is None else clip_epsilon_high
    _check_open_unit("clip_epsilon_high", high)
    log_ratio, adv, valid = prepare_masked_terms(
        new_logp, old_logp, advantages, mask, reduction, validate
    )
    ratio = log_ratio.exp()
    # The pessimistic min of both branches; the clipped branch alone is another objective.
    clipped = ratio.clamp(1.0 - clip_epsilon, 1.0 + high) * adv
    surrogate = torch.minimum(ratio * adv, clipped)
    loss = reduce_masked(-surrogate, valid, reduction)
    return _output(loss, log_ratio, ratio, valid, clip_epsilon, clip_epsilon_high)


def kl_penalty_policy_loss(
    new_logp: Tensor,
    old_logp: Tensor,
    advantages: Tensor,
    mask: Tensor | None = None,
    *,
    beta: float,
    reduction: Reduction = "token_mean",
    clip_epsilon: float = 0.2,
    validate: bool = True,
) -> PolicyLossOutput:
    """Adaptive-KL PPO loss -(E[r A] - beta * KL), KL the differentiable k3 estimate.

    Nothing is clipped: clip_epsilon only defines the reported clip_fraction.
    """
    if not (isinstance(beta, (int, float)) and math.isfinite(beta) and beta >= 0):
        raise LossError(f"beta must be a finite number >= 0, got {beta!r}")
    _check_open_unit("clip_epsilon", clip_epsilon)
    log_ratio, adv, valid = prepare_masked_terms(
        new_logp, old_logp, advantages, mask, reduction, validate
    )
    ratio = log_ratio.exp()
    k3 = (ratio - 1) - log_ratio
    loss = reduce_masked(-(ratio * adv - beta * k3), valid, reduction)
    return _output(loss, log_ratio, ratio, valid, clip_epsilon)


class AdaptiveKLController:
    """Moves the KL-penalty coefficient beta toward a target KL, once per update.

    rule="lesson" (docs/guides/lesson-exercises.md): beta x2 when KL > 2*target, /2 when
    KL < target/2.
    rule="paper" (Schulman et al. 2017): same factors, thresholds 1.5*target and target/1.5.
    A KL exactly on a threshold leaves beta unchanged; beta stays in [BETA_MIN, BETA_MAX].
    """

    _BANDS: ClassVar[dict[str, float]] = {"lesson": 2.0, "paper": 1.5}

    def __init__(
        self, beta_init: float, target: float, rule: Literal["lesson", "paper"] = "lesson"
    ) -> None:
        for name, value in (("beta_init", beta_init), ("target", target)):
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise LossError(f"{name} must be a finite number > 0, got {value!r}")
        if not BETA_MIN <= beta_init <= BETA_MAX:
            raise LossError(f"beta_init must be in [{BETA_MIN}, {BETA_MAX}], got {beta_init!r}")
        if rule not in self._BANDS:
            raise LossError(f"rule must be 'lesson' or 'paper', got {rule!r}")
        self._beta = float(beta_init)
        self.target = float(target)
        self.rule = rule

    @property
    def beta(self) -> float:
        """Current penalty coefficient."""
        return self._beta

    def state(self) -> dict[str, Any]:
        """Plain data to save with a model (loads without this package); see `from_state`."""
        return {"beta": self._beta, "target": self.target, "rule": self.rule}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> AdaptiveKLController:
        """The controller `state()` described, validated like a new one."""
        return cls(float(state["beta"]), float(state["target"]), state["rule"])

    def update(self, observed_kl: float) -> float:
        """Adapt beta to the KL measured over the last update and return the new beta."""
        kl = float(observed_kl)
        if not math.isfinite(kl):
            raise LossError(f"observed_kl must be finite, got {observed_kl!r}; stop and inspect")
        band = self._BANDS[self.rule]
        if kl > self.target * band:
            self._beta *= 2.0
        elif kl < self.target / band:
            self._beta /= 2.0
        self._beta = min(max(self._beta, BETA_MIN), BETA_MAX)
        return self._beta


def ratio_quantiles(ratio: Tensor) -> dict[str, Tensor]:
    """min, p01, p50, p99 and max of the ratios as 0-d tensors (one quantile call, no sync)."""
    if ratio.numel() == 0:
        raise LossError("ratio is empty; pass the valid ratios of a non-empty batch")
    flat = ratio.detach().reshape(-1)
    if not flat.is_floating_point():
        flat = flat.float()
    levels = torch.tensor(_QUANTILE_LEVELS, dtype=flat.dtype, device=flat.device)
    values = torch.quantile(flat, levels)
    return dict(zip(_QUANTILE_NAMES, values.unbind(0), strict=True))


def explained_variance(values: Tensor, returns: Tensor) -> Tensor:
    """1 - Var(returns - values) / Var(returns) as a 0-d tensor; nan when Var(returns) == 0.

    Population variance, as SB3 and CleanRL compute it.
    """
    if values.shape != returns.shape or values.numel() == 0:
        raise LossError(
            f"values {tuple(values.shape)} and returns {tuple(returns.shape)} must have the "
            "same non-empty shape; pass one value prediction per return"
        )
    # float64 keeps the variance of large, nearly equal returns accurate.
    y = returns.detach().reshape(-1).double()
    var_y = y.var(correction=0)
    ev = 1.0 - (y - values.detach().reshape(-1).double()).var(correction=0) / var_y
    # var_y == 0 makes the ratio meaningless (0/0 or x/0): report nan, not +-inf.
    ev = torch.where(var_y == 0, torch.full_like(ev, math.nan), ev)
    return ev.to(torch.promote_types(returns.dtype, torch.float32))


def return_spread(returns: Tensor) -> tuple[Tensor, Tensor]:
    """Population std and root mean square of the returns, as 0-d float64 tensors.

    Their ratio tells whether the returns vary enough for explained variance to mean anything.
    """
    if returns.numel() == 0:
        raise LossError("returns are empty; pass the returns of a non-empty rollout")
    y = returns.detach().reshape(-1).double()
    return y.std(correction=0), y.square().mean().sqrt()


def k3_kl(log_prob: Tensor, old_log_prob: Tensor) -> Tensor:
    """k3 estimate of KL(pi_old || pi), mean((r - 1) - log r), as train/approx_kl uses it."""
    log_ratio = log_prob - old_log_prob
    return ((torch.exp(log_ratio) - 1) - log_ratio).mean()
