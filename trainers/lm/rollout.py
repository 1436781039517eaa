"""From prompts to a frozen RolloutBatch: sample, recompute, score, reward, advantages."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from .advantages import KLEstimator, kl_to_reference, masked_gae, normalize, token_rewards
from .batch import RolloutBatch
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
    normalize_advantage: bool = True
    advantage_scope: str = "batch"


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
    """Sample responses to `prompts` and freeze everything the update needs."""
    generation, responses = generate(policy, tokenizer, prompts, sampling, generator)
    ids, attention, actions = (
        generation.input_ids,
        generation.attention_mask,
        generation.action_mask,
    )
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
    rewards = token_rewards(scores, kl, actions, generation.terminal_mask, beta)
    values = torch.where(actions, terms.values, 0.0)
    advantages, returns = masked_gae(rewards, values, actions, settings.gamma, settings.gae_lambda)
    if settings.normalize_advantage and settings.advantage_scope == "batch":
        advantages = normalize(advantages, actions)
    extra = behavior_gap(generation, terms.log_probs)
    extra["lm/sampling_processed"] = float(sampling.processes_distribution)
    extra["lm/eos_fraction"] = float(generation.ended_with_eos.float().mean())
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
    )
