"""One rollout of the language-model trainer: everything the update reads, frozen."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import torch
from torch import Tensor

from .advantages import KLEstimator


@dataclass(frozen=True)
class RolloutBatch:
    """Token tensors are (B, L) in the layout of ppo_platform.trainers.lm.policy; per-sequence ones
    are (B,).

    Four policies stay apart: behavior (what sampled, `behavior_log_probs`), old-training (the
    frozen ratio denominator, recomputed: `old_log_probs`), reference (`ref_log_probs`, for the
    KL penalty) and the current one (recomputed in every minibatch).
    """

    input_ids: Tensor
    attention_mask: Tensor
    action_mask: Tensor
    terminal_mask: Tensor
    behavior_log_probs: Tensor
    old_log_probs: Tensor
    ref_log_probs: Tensor
    values: Tensor
    advantages: Tensor
    returns: Tensor
    scores: Tensor
    tasks: tuple[str, ...]
    prompts: tuple[str, ...] = ()
    responses: tuple[str, ...] = ()
    references: tuple[str | None, ...] = ()
    extra: dict[str, float] = field(default_factory=dict)
    group_size: int = 1  # responses per prompt, in consecutive rows
    critic: bool = True  # False: critic-free advantages; `values` are 0, nothing fits them
    loss_kl_beta: float = 0.0  # > 0: the update adds beta * KL(pi || pi_ref) to its loss
    kl_estimator: KLEstimator = "k1"  # the estimator of that KL term
    # min(pi_old / pi_behavior, cap) per token (truncated importance sampling); None: all 1
    tis_weights: Tensor | None = None

    @property
    def is_weights(self) -> Tensor:
        """The per-token off-policy weights the loss uses (1 everywhere when TIS is off)."""
        if self.tis_weights is None:
            return torch.ones_like(self.old_log_probs)
        return self.tis_weights

    @property
    def size(self) -> int:
        return int(self.input_ids.shape[0])

    @property
    def response_lengths(self) -> Tensor:
        return self.action_mask.sum(1)

    def with_(self, **changes: object) -> RolloutBatch:
        """A copy with some fields replaced (tests use it to perturb one thing at a time)."""
        return replace(self, **changes)  # type: ignore[arg-type]

    def task_index(self) -> tuple[list[str], Tensor]:
        """Sorted task names and, per sequence, the index of its task."""
        names = sorted(set(self.tasks))
        lookup = {name: i for i, name in enumerate(names)}
        index = torch.tensor([lookup[t] for t in self.tasks], device=self.input_ids.device)
        return names, index
