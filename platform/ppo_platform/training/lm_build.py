"""An LM spec turned into the trainer's typed arguments: prompts, reward, trainer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ppo_platform.settings import Settings
from ppo_platform.spec.lm import LMExperimentSpec, PromptsSpec
from ppo_platform.spec.lm_inputs import resolve


def lm_path(value: str, field: str, settings: Settings) -> Path:
    """A validated spec path: relative ones inside the LM folder."""
    return resolve(value, field, settings.lm_folder, from_outside=False)


def load_prompts(spec: PromptsSpec, field: str, settings: Settings) -> list[Any]:
    """The JSONL file's records as PromptRecords (validation has checked every line)."""
    from ppo_platform.trainers.lm.rollout import PromptRecord

    path = lm_path(spec.path, f"{field}.path", settings)
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        answer = row.get(spec.answer_field) if spec.answer_field else None
        task = row.get(spec.task_field) if spec.task_field else None
        records.append(
            PromptRecord(
                row[spec.prompt_field],
                answer if isinstance(answer, str) else None,
                str(task) if isinstance(task, (str, int)) else "all",
            )
        )
    return records


def build_reward(spec: LMExperimentSpec, settings: Settings) -> Any:
    """The reward model when the spec names one, else the weighted sum of its terms."""
    from ppo_platform.trainers.lm import rewards

    model = spec.lm.model.reward_model
    if model is not None:
        return rewards.RewardModel(lm_path(model, "lm.model.reward_model", settings))
    terms = tuple(
        (term.weight, rewards.build_reward(term.name, term.params)) for term in spec.lm.rewards
    )
    return rewards.WeightedSum(terms)


def build_trainer(spec: LMExperimentSpec, settings: Settings) -> Any:
    """An LMPPOTrainer holding every setting of the spec."""
    from ppo_platform.trainers.lm.rollout import RolloutSettings
    from ppo_platform.trainers.lm.sampling import SamplingSettings
    from ppo_platform.trainers.lm.trainer import LMPPOTrainer
    from ppo_platform.trainers.lm.update import UpdateSettings

    lm, surrogate = spec.lm, spec.surrogate
    reference = lm.model.reference
    update = UpdateSettings(
        epochs=spec.update.epochs,
        minibatch_size=spec.update.minibatch_size,
        clip_epsilon=surrogate.clip_bounds[0],
        clip_epsilon_high=surrogate.clip_bounds[1],
        objective=surrogate.objective,
        value_coef=surrogate.value_coef,
        entropy_coef=surrogate.entropy_coef,
        max_grad_norm=spec.update.max_grad_norm,
        reduction=lm.reduction or "token_mean",  # the rules refuse an unnamed reduction
        value_clip=surrogate.clip_value,
        normalize_advantage=surrogate.normalize_advantage,
        target_kl=surrogate.target_kl,
    )
    rollout = RolloutSettings(
        gamma=spec.advantage.gamma,
        gae_lambda=spec.advantage.gae_lambda,
        kl_estimator=lm.kl.estimator,
        normalize_advantage=surrogate.normalize_advantage,
        estimator=spec.advantage.estimator,
        group_size=spec.advantage.group_size,
        scale_by_std=spec.advantage.scale_by_std,
        kl_placement=lm.kl.placement,
        tis_cap=lm.off_policy.truncated_is_cap,
    )
    return LMPPOTrainer(
        lm_path(lm.model.policy, "lm.model.policy", settings),
        reward=build_reward(spec, settings),
        reference_path=(
            None
            if reference in ("initial", "none")
            else lm_path(reference, "lm.model.reference", settings)
        ),
        use_reference=reference != "none",
        sampling=SamplingSettings(
            lm.generation.max_new_tokens, lm.generation.temperature, lm.generation.top_p
        ),
        update=update,
        rollout=rollout,
        batch_size=lm.prompts_per_update,
        learning_rate=spec.update.learning_rate.start,
        learning_rate_end=_end_rate(spec),
        kl_beta=lm.kl.beta,
        kl_estimator=lm.kl.estimator,
        kl_target=lm.kl.target,
        kl_rule=lm.kl.rule,
        seed=spec.budget.seed,
        lora=lora_settings(spec),
    )


def lora_settings(spec: LMExperimentSpec) -> Any:
    """The trainer's LoRASettings from lm.lora (None: the whole policy trains)."""
    from ppo_platform.trainers.lm.lora import LoRASettings

    lora = spec.lm.lora
    if lora is None:
        return None
    return LoRASettings(lora.rank, lora.alpha, lora.dropout, tuple(lora.target_modules))


def _end_rate(spec: LMExperimentSpec) -> float | None:
    rate = spec.update.learning_rate
    return rate.end if rate.schedule == "linear" else None
