"""PPO and its critic-free group variants (GRPO, RLOO) on a local causal language model:
typed arguments, like SB3; no YAML, no tracking.

    trainer = LMPPOTrainer("models/sft", reward=build_reward("exact_answer"))
    trainer.learn(prompts, n_updates=50)

One step = sample responses to a batch of prompts, freeze the rollout (behavior and recomputed
old-training log-probs, reference log-probs, scores, KL-penalized token rewards, GAE), run the
update, adapt beta, report the metrics to every listener.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import torch

from ppo_platform.trainers.losses import AdaptiveKLController

from .advantages import KL_ESTIMATORS, KLEstimator
from .batch import RolloutBatch
from .epochs import run_update
from .errors import LMTrainerError
from .lora import AdapterOffReference, LoRASettings, apply_lora, save_adapter
from .policy import PolicyWithValueHead, frozen_copy, load_causal_lm, load_tokenizer, max_positions
from .report import rollout_metrics
from .rewards import ProgrammaticReward, RewardModel
from .rollout import PromptRecord, RolloutSettings, collect_rollout, encode_prompts, generate
from .sampling import SamplingSettings
from .update import UpdateSettings

UpdateListener = Callable[["LMPPOTrainer", dict[str, float]], None]
_FINITE_REQUIRED = (
    "train/policy_gradient_loss",
    "train/value_loss",
    "train/approx_kl",
    "lm/kl_ref",
)


def _check_kl_arguments(
    kl_estimator: str, kl_beta: float, kl_target: float | None, use_reference: bool
) -> None:
    if kl_estimator not in KL_ESTIMATORS:
        raise LMTrainerError(f"kl_estimator must be one of {KL_ESTIMATORS}, got {kl_estimator!r}")
    if not (math.isfinite(kl_beta) and kl_beta >= 0):
        raise LMTrainerError(f"kl_beta must be a finite number >= 0, got {kl_beta!r}")
    if not use_reference and (kl_beta > 0 or kl_target is not None):
        raise LMTrainerError(
            "a KL penalty (kl_beta > 0 or kl_target) needs a reference; use_reference=True"
        )


class LMPPOTrainer:
    """PPO with a value head (or a group baseline, no critic) and a KL penalty to a frozen
    reference, on CPU-sized models."""

    def __init__(
        self,
        policy_path: str | Path,
        *,
        reward: ProgrammaticReward | RewardModel,
        reference_path: str | Path | None = None,
        use_reference: bool = True,
        sampling: SamplingSettings | None = None,
        update: UpdateSettings | None = None,
        rollout: RolloutSettings | None = None,
        batch_size: int = 16,
        learning_rate: float = 1e-5,
        learning_rate_end: float | None = None,
        kl_beta: float = 0.05,
        kl_estimator: KLEstimator = "k1",
        kl_target: float | None = None,
        kl_rule: Literal["lesson", "paper"] = "lesson",
        seed: int = 0,
        lora: LoRASettings | None = None,
        update_listeners: Sequence[UpdateListener] = (),
    ) -> None:
        _check_kl_arguments(kl_estimator, kl_beta, kl_target, use_reference)
        self.sampling = sampling or SamplingSettings()
        self.settings = update or UpdateSettings()
        self.rollout_settings = rollout or RolloutSettings(
            kl_estimator=kl_estimator,
            normalize_advantage=self.settings.normalize_advantage,
            advantage_scope=self.settings.advantage_scope,
        )
        self.batch_size, self.kl_estimator, self.seed = batch_size, kl_estimator, seed
        torch.manual_seed(seed)
        self.random = random.Random(seed)
        self.generator = torch.Generator().manual_seed(seed)
        self.tokenizer = load_tokenizer(policy_path)
        self.policy_path, self.lora = Path(policy_path), lora
        lm = load_causal_lm(policy_path)
        self.policy = PolicyWithValueHead(
            lm if lora is None else apply_lora(lm, lora), value_head=self.rollout_settings.critic
        )
        self.policy.eval()  # dropout off: the ratio is 1 before the first step, as it must be
        self.reference: Any = None
        if use_reference and reference_path is not None:
            self.reference = frozen_copy(load_causal_lm(reference_path))
        elif use_reference:  # the starting weights: with LoRA, the base with the adapter off
            self.reference = (
                frozen_copy(self.policy.lm) if lora is None else AdapterOffReference(self.policy.lm)
            )
        self.reward = reward
        self.kl_controller = (
            AdaptiveKLController(kl_beta, kl_target, kl_rule) if kl_target is not None else None
        )
        self.fixed_beta, self.listeners = kl_beta, list(update_listeners)
        trainable = [p for p in self.policy.parameters() if p.requires_grad]
        self.optimizer = torch.optim.Adam(trainable, lr=learning_rate)
        self.learning_rate = (learning_rate, learning_rate_end)
        self.planned_updates = 0  # set by learn(): a linear learning rate decays over them
        self.stop_condition: Callable[[], bool] | None = None
        self.n_updates = 0
        self.n_sequences = 0
        self.last_batch: RolloutBatch | None = None

    @property
    def beta(self) -> float:
        """The KL-penalty coefficient the next rollout uses."""
        return self.kl_controller.beta if self.kl_controller is not None else self.fixed_beta

    def add_update_listener(self, listener: UpdateListener) -> None:
        self.listeners.append(listener)

    def check_prompts(self, prompts: Sequence[PromptRecord]) -> None:
        """Refuse prompts whose longest prompt plus max_new_tokens exceeds the model's positions."""
        limit = max_positions(self.policy.config)
        ids, _ = encode_prompts(self.tokenizer, prompts)
        if limit is not None and ids.shape[1] + self.sampling.max_new_tokens > limit:
            raise LMTrainerError(
                f"prompt length {ids.shape[1]} + max_new_tokens {self.sampling.max_new_tokens} "
                f"exceeds the model's {limit} positions; shorten the prompts or max_new_tokens"
            )

    def collect(self, prompts: Sequence[PromptRecord]) -> RolloutBatch:
        """A rollout on `prompts` with the current policy and beta."""
        return collect_rollout(
            self.policy,
            self.reference,
            self.tokenizer,
            self.reward,
            prompts,
            self.sampling,
            self.rollout_settings,
            self.beta,
            self.generator,
        )

    def update(self, batch: RolloutBatch) -> dict[str, float]:
        """The PPO update on a frozen rollout; returns its metrics (trains the policy)."""
        return run_update(self.policy, self.optimizer, batch, self.settings, self.generator)

    def step(self, prompts: Sequence[PromptRecord]) -> dict[str, float]:
        """One rollout and its update; beta adapts to the rollout's KL; listeners are called."""
        beta = self.beta
        start, end = self.learning_rate
        if end is not None and self.planned_updates:
            progress = min(self.n_updates / self.planned_updates, 1.0)
            for group in self.optimizer.param_groups:
                group["lr"] = start + (end - start) * progress
        batch = self.collect(prompts)
        self.last_batch = batch
        metrics = rollout_metrics(batch, self.kl_estimator, beta, self.reference is not None)
        metrics["train/learning_rate"] = float(self.optimizer.param_groups[0]["lr"])
        metrics.update(self.update(batch))
        self.n_updates += 1
        self.n_sequences += batch.size
        bad = [n for n in _FINITE_REQUIRED if not math.isfinite(metrics.get(n, 0.0))]
        if bad:
            from ppo_platform.trainers.errors import NonFiniteError

            raise NonFiniteError(f"non-finite values after update {self.n_updates}: {bad}")
        if self.kl_controller is not None:
            metrics["lm/kl_target"] = self.kl_controller.target
            self.kl_controller.update(metrics["lm/kl_ref"])
        for listener in self.listeners:
            listener(self, metrics)
        return metrics

    def sample_prompts(self, prompts: Sequence[PromptRecord]) -> list[PromptRecord]:
        """batch_size prompts drawn without replacement (with it when there are fewer); the
        rollout samples rollout.group_size responses to each."""
        if len(prompts) >= self.batch_size:
            return self.random.sample(list(prompts), self.batch_size)
        return [self.random.choice(list(prompts)) for _ in range(self.batch_size)]

    def learn(self, prompts: Sequence[PromptRecord], n_updates: int) -> None:
        """`n_updates` steps on prompts drawn from `prompts`; a stop condition ends it early."""
        if not prompts:
            raise LMTrainerError("prompts is empty; pass at least one PromptRecord")
        self.check_prompts(prompts)
        self.planned_updates = self.n_updates + n_updates
        for _ in range(n_updates):
            if self.stop_condition is not None and self.stop_condition():
                return
            self.step(self.sample_prompts(prompts))

    @torch.no_grad()
    def respond(self, prompts: Sequence[PromptRecord], greedy: bool = True) -> list[str]:
        """The policy's responses (greedy by default: evaluation)."""
        responses: list[str] = []
        for start in range(0, len(prompts), 64):
            _, texts = generate(
                self.policy,
                self.tokenizer,
                prompts[start : start + 64],
                self.sampling,
                self.generator,
                greedy,
            )
            responses += texts
        return responses

    def save(self, folder: str | Path) -> None:
        """The policy in transformers format (loadable as a model folder), or with LoRA its
        adapter and a note of its base; plus its value head when it has one (a critic-free
        estimator builds none)."""
        out = Path(folder)
        if self.lora is not None:
            save_adapter(self.policy.lm, out, self.policy_path)
        else:
            self.policy.lm.save_pretrained(out)
        self.tokenizer.save_pretrained(out)
        if self.policy.value_head is not None:
            torch.save(self.policy.value_head.state_dict(), out / "value_head.pt")

    def policy_model(self) -> Any:
        return self.policy.lm
