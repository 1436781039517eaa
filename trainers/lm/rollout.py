"""From prompts to a frozen RolloutBatch: sample, recompute, score, reward, advantages."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from .advantages import (
    GROUP_ESTIMATORS,
    AdvantageEstimator,
    KLEstimator,
    KLPlacement,
    group_advantages,
    kl_to_reference,
    masked_gae,
    normalize,
    token_rewards,
    zero_spread_fraction,
)
from .batch import RolloutBatch
from .errors import LMTrainerError
from .policy import PolicyWithValueHead, reference_log_probs
from .rewards import ProgrammaticReward, RewardModel, Sample, score_samples
from .sampling import Generation, SamplingSettings, sample_responses


@dataclass(frozen=True)
class PromptRecord:
    """A prompt, its reference answer (if any) and its task slice."""

    prompt: str
    reference: str | None = None
    task: str = "all"


@dataclass(frozen=True)
class RolloutSettings:
    """How a rollout turns samples into advantages."""

    gamma: float = 1.0  # the RLHF column (docs/guides/planning.md): no discount in a response
    gae_lambda: float = 1.0  # < 1 with an untrained critic pushes against first tokens
    kl_estimator: KLEstimator = "k1"
    normalize_advantage: bool = True  # gae only: a group baseline is the normalization
    advantage_scope: str = "batch"
    estimator: AdvantageEstimator = "gae"
    group_size: int = 1  # responses sampled per prompt, in consecutive rows
    scale_by_std: bool = True  # grpo: divide by the group's std (False: Dr. GRPO)
    kl_placement: KLPlacement = "reward"  # "loss": beta * KL joins the loss instead (GRPO)
    # Truncated importance sampling: weight each token's loss by min(pi_old / pi_behavior, cap)
    # where sampling (temperature, top-p, another engine) differs from training; None: off.
    tis_cap: float | None = None

    def __post_init__(self) -> None:
        if self.estimator not in ("gae", *GROUP_ESTIMATORS):
            raise LMTrainerError(
                f"estimator must be 'gae', 'grpo' or 'rloo', got {self.estimator!r}"
            )
        if not (isinstance(self.group_size, int) and self.group_size >= 1):
            raise LMTrainerError(f"group_size must be an integer >= 1, got {self.group_size!r}")
        if self.kl_placement not in ("reward", "loss"):
            raise LMTrainerError(
                f"kl_placement must be 'reward' or 'loss', got {self.kl_placement!r}"
            )
        if self.tis_cap is not None and not self.tis_cap >= 1.0:
            raise LMTrainerError(f"tis_cap must be >= 1 (None: off), got {self.tis_cap!r}")
        if self.estimator in GROUP_ESTIMATORS and self.group_size < 2:
            raise LMTrainerError(
                f"estimator {self.estimator!r} compares responses to the same prompt and needs "
                f"group_size >= 2, got {self.group_size}; sample 4-16 responses per prompt"
            )

    def split_beta(self, beta: float) -> tuple[float, float]:
        """(reward beta, loss beta): the KL is in the reward or in the loss, never both."""
        return (beta, 0.0) if self.kl_placement == "reward" else (0.0, beta)

    @property
    def critic(self) -> bool:
        """Whether the advantages need a value head (GAE does; the group baselines do not)."""
        return self.estimator == "gae"


def encode_prompts(tokenizer: Any, prompts: Sequence[PromptRecord]) -> tuple[Tensor, Tensor]:
    """Left-padded prompt ids and their attention mask."""
    tokenizer.padding_side = "left"
    encoded = tokenizer([p.prompt for p in prompts], return_tensors="pt", padding=True)
    return encoded["input_ids"], encoded["attention_mask"]


def decode_responses(tokenizer: Any, generation: Generation) -> list[str]:
    """Each response's text: its action tokens, EOS left out."""
    texts = []
    for ids, mask in zip(generation.input_ids, generation.action_mask, strict=True):
        texts.append(tokenizer.decode(ids[mask].tolist(), skip_special_tokens=True))
    return texts


def generate(
    policy: PolicyWithValueHead,
    tokenizer: Any,
    prompts: Sequence[PromptRecord],
    sampling: SamplingSettings,
    generator: torch.Generator | None,
    greedy: bool = False,
) -> tuple[Generation, list[str]]:
    ids, mask = encode_prompts(tokenizer, prompts)
    generation = sample_responses(
        policy.lm,
        ids,
        mask,
        sampling,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        generator=generator,
        greedy=greedy,
    )
    return generation, decode_responses(tokenizer, generation)


def behavior_gap(generation: Generation, old_log_probs: Tensor) -> dict[str, float]:
    """How far the recomputed old-training log-probs are from the behavior ones (never mixed)."""
    gap = (old_log_probs - generation.behavior_log_probs)[generation.action_mask].abs()
    return {"lm/behavior_gap_mean": float(gap.mean()), "lm/behavior_gap_max": float(gap.max())}


def truncated_is_weights(
    old_log_probs: Tensor, behavior_log_probs: Tensor, action_mask: Tensor, cap: float
) -> tuple[Tensor, float]:
    """min(pi_old / pi_behavior, cap) on the action tokens (1 elsewhere), and the share of
    action tokens whose weight the cap truncated."""
    ratio = torch.exp(old_log_probs - behavior_log_probs)
    weights = torch.where(action_mask, ratio.clamp(max=cap), 1.0)
    truncated = (ratio > cap) & action_mask
    share = float(truncated.sum() / action_mask.sum().clamp(min=1))
    return weights, share


def _tis_weights(
    generation: Generation, old_log_probs: Tensor, cap: float | None, extra: dict[str, float]
) -> Tensor | None:
    """The truncated IS weights when a cap is set (their truncated share goes into `extra`)."""
    if cap is None:
        return None
    weights, extra["lm/tis_truncated_fraction"] = truncated_is_weights(
        old_log_probs, generation.behavior_log_probs, generation.action_mask, cap
    )
    return weights


def rollout_extra(
    generation: Generation,
    old_log_probs: Tensor,
    scores: Tensor,
    sampling: SamplingSettings,
    settings: RolloutSettings,
) -> dict[str, float]:
    """The rollout's own metrics: behavior gap, sampling, EOS share, groups scoring alike."""
    extra = behavior_gap(generation, old_log_probs)
    extra["lm/sampling_processed"] = float(sampling.processes_distribution)
    extra["lm/eos_fraction"] = float(generation.ended_with_eos.float().mean())
    if settings.group_size > 1:
        extra["lm/group_zero_spread_fraction"] = zero_spread_fraction(scores, settings.group_size)
    return extra


@torch.no_grad()
def collect_rollout(
    policy: PolicyWithValueHead,
    reference: Any,
    tokenizer: Any,
    reward: ProgrammaticReward | RewardModel,
    prompts: Sequence[PromptRecord],
    sampling: SamplingSettings,
    settings: RolloutSettings,
    beta: float,
    generator: torch.Generator | None,
) -> RolloutBatch:
    """Sample `settings.group_size` responses to each of `prompts` (consecutive rows) and
    freeze everything the update needs."""
    prompts = [p for p in prompts for _ in range(settings.group_size)]
    generation, responses = generate(policy, tokenizer, prompts, sampling, generator)
    ids, attention = generation.input_ids, generation.attention_mask
    actions = generation.action_mask
    terms = policy(ids, attention)  # the old-training policy, recomputed on the training side
    # No reference (no KL penalty): the old policy stands in, so every KL term is exactly 0.
    ref_log_probs = (
        terms.log_probs if reference is None else reference_log_probs(reference, ids, attention)
    )
    samples = [
        Sample(p.prompt, text, p.reference, int(n), p.task)
        for p, text, n in zip(prompts, responses, actions.sum(1).tolist(), strict=True)
    ]
    scores = torch.tensor(score_samples(reward, samples), dtype=torch.float32)
    kl = torch.where(
        actions, kl_to_reference(terms.log_probs, ref_log_probs, settings.kl_estimator), 0.0
    )
    values = torch.where(actions, terms.values, 0.0)
    reward_beta, loss_beta = settings.split_beta(beta)
    advantages, returns = rollout_advantages(
        scores, kl, values, actions, generation.terminal_mask, reward_beta, settings
    )
    extra = rollout_extra(generation, terms.log_probs, scores, sampling, settings)
    tis_weights = _tis_weights(generation, terms.log_probs, settings.tis_cap, extra)
    return RolloutBatch(
        input_ids=ids,
        attention_mask=attention,
        action_mask=actions,
        terminal_mask=generation.terminal_mask,
        behavior_log_probs=generation.behavior_log_probs,
        old_log_probs=terms.log_probs,
        ref_log_probs=ref_log_probs,
        values=values,
        advantages=advantages,
        returns=returns,
        scores=scores,
        tasks=tuple(p.task for p in prompts),
        prompts=tuple(p.prompt for p in prompts),
        responses=tuple(responses),
        references=tuple(p.reference for p in prompts),
        extra=extra,
        group_size=settings.group_size,
        critic=settings.critic,
        loss_kl_beta=loss_beta,
        kl_estimator=settings.kl_estimator,
        tis_weights=tis_weights,
    )


def rollout_advantages(
    scores: Tensor,
    kl: Tensor,
    values: Tensor,
    actions: Tensor,
    terminal: Tensor,
    beta: float,
    settings: RolloutSettings,
) -> tuple[Tensor, Tensor]:
    """(advantages, returns), (B, L), 0 off the action tokens.

    gae: KL-penalized token rewards, GAE against the critic, then the named normalization.
    grpo / rloo: each response's return R_i = score_i - beta * sum_t KL_t, its group
    advantage on every one of its action tokens; `returns` holds R_i there (no critic fits it).
    """
    if settings.estimator == "gae":
        rewards = token_rewards(scores, kl, actions, terminal, beta)
        advantages, returns = masked_gae(
            rewards, values, actions, settings.gamma, settings.gae_lambda
        )
        if settings.normalize_advantage and settings.advantage_scope == "batch":
            advantages = normalize(advantages, actions)
        return advantages, returns
    sequence_returns = scores - beta * kl.sum(1)
    per_sequence = group_advantages(
        sequence_returns, settings.group_size, settings.estimator, settings.scale_by_std
    )
    advantages = torch.where(actions, per_sequence[:, None], 0.0)
    return advantages, torch.where(actions, sequence_returns[:, None], 0.0)
