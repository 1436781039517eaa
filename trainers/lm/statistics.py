"""What one update of the language-model trainer reports, overall and per task slice.

Losses are weighted by what the reduction counts (tokens or sequences), so the reported
loss of a one-epoch update over unchanged weights is the full-batch loss, whatever the order
of the minibatches. Clip fraction and approx KL are token means, per slice and overall.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from ppo_platform.trainers.losses import ratio_quantiles

from .update import MinibatchLoss


def epoch_kl_name(epoch: int) -> str:
    return f"train/approx_kl_epoch_{epoch:02d}"


@dataclass
class _TokenSums:
    """Per-slice sums over action tokens: clipped count, k3 sum, token count."""

    clipped: Tensor
    k3: Tensor
    tokens: Tensor

    @classmethod
    def zeros(cls, n_slices: int) -> _TokenSums:
        return cls(*(torch.zeros(n_slices, dtype=torch.float64) for _ in range(3)))

    def add(self, other: _TokenSums) -> None:
        self.clipped += other.clipped
        self.k3 += other.k3
        self.tokens += other.tokens


@dataclass
class UpdateStatistics:
    """Accumulates minibatch results on the device; `read()` turns them into metrics once."""

    slice_names: list[str]
    weighted: dict[str, list[Tensor]] = field(default_factory=dict)
    weights: list[Tensor] = field(default_factory=list)
    epochs: list[_TokenSums] = field(default_factory=list)
    last_epoch_ratios: list[Tensor] = field(default_factory=list)
    grad_norms: list[Tensor] = field(default_factory=list)

    def start_epoch(self) -> None:
        self.epochs.append(_TokenSums.zeros(len(self.slice_names)))
        self.last_epoch_ratios = []

    def add(self, loss: MinibatchLoss, log_ratio: Tensor, mask: Tensor, slices: Tensor) -> None:
        """One minibatch: its loss terms and its per-token ratios (B, L) with slice ids (B,)."""
        weight = loss.weight.to(torch.float64)
        terms = {
            "policy": loss.policy.loss,
            "value": loss.value,
            "entropy": loss.entropy,
            "kl": loss.kl,
        }
        for name, value in terms.items():
            if value is None:  # no critic or no KL term: nothing to report (not a loss of 0)
                continue
            self.weighted.setdefault(name, []).append(value.detach().double() * weight)
        self.weights.append(weight)
        with torch.no_grad():
            lr = torch.where(mask, log_ratio.detach().double(), 0.0)
            ratio = lr.exp()
            per_token = {
                "clipped": loss.policy.clipped_entries,  # what the objective clipped
                "k3": torch.where(mask, (ratio - 1) - lr, 0.0),
                "tokens": mask,
            }
            n = len(self.slice_names)
            sums = {
                k: torch.zeros(n, dtype=torch.float64).index_add_(0, slices, v.double().sum(1))
                for k, v in per_token.items()
            }
            self.epochs[-1].add(_TokenSums(sums["clipped"], sums["k3"], sums["tokens"]))
            self.last_epoch_ratios.append(ratio[mask])

    def read(self) -> dict[str, float]:
        """The update's metrics: overall names as in ppo_platform.trainers.ppo, then
        `<name>/<slice>`."""
        total_weight = torch.stack(self.weights).sum()
        metrics = {
            f"train/{name}_loss" if name != "entropy" else "train/entropy": float(
                torch.stack(values).sum() / total_weight
            )
            for name, values in self.weighted.items()
        }
        metrics["train/policy_gradient_loss"] = metrics.pop("train/policy_loss")
        metrics["train/entropy_loss"] = -metrics["train/entropy"]
        every = _TokenSums.zeros(len(self.slice_names))
        for epoch in self.epochs:
            every.add(epoch)
        last = self.epochs[-1]
        metrics["train/clip_fraction"] = float(every.clipped.sum() / every.tokens.sum())
        metrics["train/approx_kl"] = float(last.k3.sum() / last.tokens.sum())
        for i, epoch in enumerate(self.epochs, start=1):
            metrics[epoch_kl_name(i)] = float(epoch.k3.sum() / epoch.tokens.sum())
        for i, name in enumerate(self.slice_names):
            if every.tokens[i] > 0:
                metrics[f"train/clip_fraction/{name}"] = float(every.clipped[i] / every.tokens[i])
            if last.tokens[i] > 0:
                metrics[f"train/approx_kl/{name}"] = float(last.k3[i] / last.tokens[i])
        quantiles = ratio_quantiles(torch.cat(self.last_epoch_ratios))
        metrics.update({f"train/ratio_{k}": float(v) for k, v in quantiles.items()})
        if self.grad_norms:
            metrics["train/grad_norm"] = float(torch.stack(self.grad_norms).mean())
        metrics["train/epochs_run"] = float(len(self.epochs))
        return metrics
