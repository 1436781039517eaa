"""The action heads and the clipped surrogate of `ppo_platform.trainers.fast.manual`, forward and
backward
(with it, they replace autograd in the PPO update).

Each class computes its forward pass at construction with the ops of
`distributions.evaluate_actions` and `losses.clipped_policy_loss`, and its backward on request
with the kernels autograd's formulas call, summing a tensor's gradients in the order the engine
does (the consumer created last first), so the gradients are `loss.backward()`'s bit for bit.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ..losses import PolicyLossOutput

_HALF_LOG_2PI = math.log(math.sqrt(2 * math.pi))  # torch Normal's constant, as distributions'
_GAUSSIAN_ENTROPY = 0.5 + 0.5 * math.log(2 * math.pi)


class Surrogate:
    """The clipped surrogate -mean(min(r A, clip(r, 1 - eps, 1 + eps) A)) of the log-probs."""

    def __init__(self, log_prob: Tensor, old: Tensor, adv: Tensor, clip_epsilon: float) -> None:
        self.adv, self.eps = adv, clip_epsilon
        log_ratio = log_prob - old
        self.ratio = log_ratio.exp()
        self.clipped = self.ratio.clamp(1.0 - clip_epsilon, 1.0 + clip_epsilon) * adv
        self.unclipped = self.ratio * adv
        surrogate = torch.minimum(self.unclipped, self.clipped)
        loss = (-surrogate).mean()
        self.out = PolicyLossOutput(loss, log_ratio, self.ratio, None, clip_epsilon)

    def backward(self, seed: Tensor) -> Tensor:
        """Gradient of the loss * seed w.r.t. the log-probs."""
        n = self.ratio.numel()
        grad = -(seed.expand(self.ratio.shape) / n)  # MeanBackward, NegBackward
        # minimum: a tie sends half the gradient to each side.
        s, c = self.unclipped, self.clipped
        grad_s = torch.where(s == c, grad / 2, grad).masked_fill_(s > c, 0)
        grad_c = torch.where(s == c, grad / 2, grad).masked_fill_(s < c, 0)
        lo, hi = 1.0 - self.eps, 1.0 + self.eps
        inside = (self.ratio >= lo).logical_and_(self.ratio <= hi)
        grad_ratio = torch.where(inside, grad_c * self.adv, torch.zeros((), dtype=grad.dtype))
        grad_ratio = grad_ratio + grad_s * self.adv
        return grad_ratio * self.ratio  # ExpBackward, SubBackward


class CategoricalHead:
    """torch Categorical over the logits `params`: log-probs of `actions` and entropies."""

    def __init__(self, params: Tensor, actions: Tensor) -> None:
        self.params = params
        self.lse = params.logsumexp(dim=-1, keepdim=True)
        self.logits = params - self.lse
        self.index = actions.long().flatten().unsqueeze(-1)
        self.log_prob = self.logits.gather(-1, self.index).squeeze(-1)
        self.clamped = torch.clamp(self.logits, min=torch.finfo(self.logits.dtype).min)
        self.probs = torch.softmax(self.logits, dim=-1)
        self.entropy = -(self.clamped * self.probs).sum(-1)

    def backward(self, grad_log_prob: Tensor, entropy_seed: Tensor) -> list[Tensor]:
        """[gradient w.r.t. params] of log_prob . grad_log_prob + entropy loss * entropy_seed."""
        n = self.log_prob.numel()
        grad_logits = torch.zeros_like(self.logits).scatter_add_(
            -1, self.index, grad_log_prob.unsqueeze(-1)
        )
        # entropy_loss = -mean(-(clamped * probs).sum(-1)): the two negations cancel exactly.
        grad_entropy = entropy_seed.expand(self.entropy.shape) / n
        grad_product = grad_entropy.unsqueeze(-1).expand(self.logits.shape)
        grad_clamped = grad_product * self.probs
        grad_probs = grad_product * self.clamped
        floor = torch.finfo(self.logits.dtype).min
        zero = torch.zeros((), dtype=grad_logits.dtype)
        # The engine sums the three gradients of the logits in this order (entropy's two first).
        from_entropy = torch.where(self.logits >= floor, grad_clamped, zero)
        from_entropy = from_entropy + torch._softmax_backward_data(
            grad_probs, self.probs, -1, self.probs.dtype
        )
        grad_logits = from_entropy + grad_logits
        # logits = params - logsumexp(params): both sides reach params.
        grad_lse = (-grad_logits).sum([1], keepdim=True)
        return [grad_logits + grad_lse * (self.params - self.lse).exp()]


class GaussianHead:
    """SB3's diagonal Gaussian: torch Normal(mean, ones * exp(log_std)), log-probs and
    entropies summed over the action dimensions."""

    def __init__(self, mean: Tensor, log_std: Tensor, actions: Tensor) -> None:
        self.mean, self.log_std = mean, log_std
        self.scale = log_std.exp()
        self.ones = torch.ones_like(mean)
        self.std = self.ones * self.scale
        self.distance = actions - mean
        self.numerator = -(self.distance**2)
        self.denominator = 2 * self.std**2
        log_prob = self.numerator / self.denominator - self.std.log() - _HALF_LOG_2PI
        self.log_prob = log_prob.sum(dim=1)
        self.entropy = (_GAUSSIAN_ENTROPY + torch.log(self.std)).sum(dim=1)

    def backward(self, grad_log_prob: Tensor, entropy_seed: Tensor) -> list[Tensor]:
        """[gradient w.r.t. mean, gradient w.r.t. log_std] of log_prob . grad_log_prob +
        entropy loss * entropy_seed."""
        shape = self.mean.shape
        grad = grad_log_prob.unsqueeze(1).expand(shape)  # SumBackward; the two subs pass it on
        grad_numerator = grad / self.denominator  # DivBackward
        ratio = (self.numerator / self.denominator) / self.denominator
        grad_denominator = -grad * ratio
        grad_from_variance = (grad_denominator * 2) * (2.0 * self.std)  # MulBackward, PowBackward
        grad_distance = (-grad_numerator) * (2.0 * self.distance)  # NegBackward, PowBackward
        grad_from_log = (-grad) / self.std  # LogBackward of std.log()
        # entropy_loss = -mean(entropy): NegBackward, MeanBackward, SumBackward, LogBackward.
        grad_entropy = (-entropy_seed).expand(self.entropy.shape) / self.entropy.numel()
        grad_from_entropy = grad_entropy.unsqueeze(1).expand(shape) / self.std
        # std's three consumers, latest first: log (entropy), log (log_prob), pow (variance).
        grad_std = (grad_from_entropy + grad_from_log) + grad_from_variance
        grad_scale = (grad_std * self.ones).sum([0], keepdim=True).view(self.log_std.shape)
        return [-grad_distance, grad_scale * self.scale]  # SubBackward; ExpBackward


class RolloutGaussian:
    """SB3's DiagGaussianDistribution actions and their summed log-probs during a rollout:
    torch Normal's `rsample` (the same single `normal_` draw) and `log_prob`, without the
    objects. The log std does not change between the steps of a rollout, so the std, 2 std^2
    and log std are computed once per batch shape and version of the parameter: the same
    kernels on the same inputs, so the same tensors as computing them every step."""

    def __init__(self, log_std: Tensor) -> None:
        self.log_std = log_std
        self._key: tuple | None = None
        self._terms: tuple[Tensor, Tensor, Tensor] | None = None

    def _std_terms(self, mean: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        key = (mean.shape, mean.dtype, self.log_std._version)  # an optimizer step bumps it
        if self._terms is None or key != self._key:
            std = torch.ones_like(mean) * self.log_std.exp()
            self._terms, self._key = (std, 2 * std**2, std.log()), key
        return self._terms

    def sample(self, mean: Tensor, deterministic: bool) -> tuple[Tensor, Tensor]:
        """(actions, summed log-probs) for the means of one step."""
        std, two_variance, log_std = self._std_terms(mean)
        if deterministic:
            actions = mean
        else:
            actions = mean + torch.empty(mean.shape, dtype=mean.dtype).normal_() * std
        # normal_log_prob's expression, term for term.
        log_prob = -((actions - mean) ** 2) / two_variance - log_std - _HALF_LOG_2PI
        return actions, log_prob.sum(dim=1)


def normal_log_prob(mean: Tensor, std: Tensor, actions: Tensor) -> Tensor:
    """torch Normal(mean, std).log_prob(actions), summed over the action dimensions."""
    log_prob = -((actions - mean) ** 2) / (2 * std**2) - std.log() - _HALF_LOG_2PI
    return log_prob.sum(dim=1)
