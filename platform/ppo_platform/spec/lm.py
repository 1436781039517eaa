"""The spec of `algorithm: ppo_lm`: PPO on a local causal language model
(docs/guides/language-models.md).

It shares the gymnasium spec's sections where they mean the same thing (update, surrogate,
advantage, diagnostics, tracking, sweep, tune), so the refusal rules apply unchanged; what is new
lives under `lm:`. Paths are checked against the file system by `spec.lm_inputs`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from ppo_platform.spec.base import StrictModel, WholeSpec
from ppo_platform.spec.experiment import (
    AdvantageSpec,
    DiagnosticsSpec,
    SafeName,
    Schedule,
    SurrogateSpec,
    TrackingSpec,
    UpdateSpec,
)
from ppo_platform.spec.search import SweepSpec, TuneSpec
from ppo_platform.trainers.lm.errors import LMTrainerError
from ppo_platform.trainers.lm.rewards import VOCABULARY, build_reward

LM_ALGORITHM = "ppo_lm"
# A relative path: resolved inside the LM folder (Settings.lm_dir); no '..', no leading '/'.
PATH_PATTERN = r"^[^\x00]{1,512}$"
RewardName = Literal["exact_answer", "contains", "regex", "length_penalty"]


class LMModelSpec(StrictModel):
    policy: str = Field(
        pattern=PATH_PATTERN,
        description="Folder of the policy in transformers format (config.json, weights, "
        "tokenizer), relative to the LM folder (PPO_PLATFORM_LM_DIR); never a hub name.",
    )
    reference: str = Field(
        "initial",
        pattern=PATH_PATTERN,
        description="The frozen reference of the KL penalty: `initial` (the policy's starting "
        "weights), `none` (no reference: kl.beta must be 0), or a model folder.",
    )
    reward_model: str | None = Field(
        None,
        pattern=PATH_PATTERN,
        description="Folder of a sequence-classification model (one label) scoring prompt + "
        "response; instead of `rewards` (both set: refused).",
    )


class PromptsSpec(StrictModel):
    path: str = Field(pattern=PATH_PATTERN, description="JSONL file, one object per line.")
    prompt_field: str = Field("prompt", min_length=1, description="Key holding the prompt.")
    answer_field: str | None = Field(
        "answer", description="Key holding the reference answer (exact_answer needs it)."
    )
    task_field: str | None = Field(
        "task", description="Key naming the task slice (metrics are also reported per slice)."
    )


class RewardTermSpec(StrictModel):
    name: RewardName = Field(description="A reward of the fixed vocabulary.")
    weight: float = Field(1.0, allow_inf_nan=False, description="Weight in the sum of terms.")
    params: dict[str, str | int | float | bool] = Field(
        default_factory=dict, description="The reward's parameters (validated by name)."
    )

    @model_validator(mode="after")
    def _buildable(self) -> RewardTermSpec:
        try:
            build_reward(self.name, self.params)
        except LMTrainerError as error:
            raise ValueError(str(error)) from None
        return self


class GenerationSpec(StrictModel):
    max_new_tokens: int = Field(16, ge=1, le=4096, description="Longest response, in tokens.")
    temperature: float = Field(1.0, gt=0, le=10, description="Sampling temperature.")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus sampling mass (1: off).")


class LMKLSpec(StrictModel):
    """The KL to the reference: in the reward (r_t -= beta * KL_t) or in the loss."""

    estimator: Literal["k1", "k2", "k3"] = Field(
        "k1",
        description="`k1` = log pi - log pi_ref; `k2` = 0.5 (log pi - log pi_ref)^2; "
        "`k3` = (rho - 1) - log rho, rho = ref/pi.",
    )
    placement: Literal["reward", "loss"] = Field(
        "reward",
        description="`reward`: r_t -= beta * KL_t before the advantages (PPO-RLHF); `loss`: "
        "beta * KL of the current policy joins the loss (GRPO), the reward is the score.",
    )
    beta: float = Field(
        0.05,
        ge=0,
        le=100,
        description="Coefficient (initial if adaptive); 0: no KL term (lm/kl_ref still "
        "measured, and the run says so).",
    )
    target: float | None = Field(
        None, gt=0, description="Adaptive beta: the target of lm/kl_ref (null: beta fixed)."
    )
    rule: Literal["lesson", "paper"] = Field(
        "lesson", description="Adaptive rule: `lesson` (2 x target) or `paper` (1.5 x target)."
    )


class LMOffPolicySpec(StrictModel):
    """Correction where sampling and training differ (temperature, top-p, another engine)."""

    truncated_is_cap: float | None = Field(
        None,
        ge=1,
        le=100,
        description="Truncated importance sampling: weight each token's loss by "
        "min(pi_old / pi_behavior, cap); the share of truncated tokens is reported as "
        "lm/tis_truncated_fraction (null: off; 2 is usual).",
    )


class LoRASpec(StrictModel):
    """A LoRA adapter (peft) trains instead of the whole policy; the reference is the base
    model with the adapter off (no second copy in memory)."""

    rank: int = Field(8, ge=1, le=1024, description="The adapter's rank r.")
    alpha: int = Field(16, ge=1, le=4096, description="Scale alpha (updates x alpha / r).")
    dropout: float = Field(0.0, ge=0, lt=1, description="Dropout on the adapter's input.")
    target_modules: list[str] = Field(
        min_length=1,
        max_length=64,
        description="Names of the modules the adapter wraps (suffixes of the model's module "
        "names, e.g. c_attn for GPT-2, q_proj and v_proj for Llama); each must exist in the "
        "model (checked at validate).",
    )


class ClipBoundsSpec(StrictModel):
    """The ratio's interval [1 - low, 1 + high]: low = high is PPO's symmetric clip; high >
    low is Clip-Higher (more room to raise a token's probability than to lower it)."""

    low: float = Field(0.2, gt=0, lt=1, description="1 - low bounds the ratio below.")
    high: float = Field(
        0.2, gt=0, lt=1, description="1 + high bounds it above (refused above 0.3)."
    )


class LMSurrogateSpec(SurrogateSpec):
    """The policy objective and its clip range (beside the shared surrogate fields)."""

    objective: Literal["ppo", "gspo", "cispo"] = Field(
        "ppo",
        description="`ppo`: PPO-Clip per token; `gspo`: one length-normalised ratio per "
        "response, clipped per response; `cispo`: the clipped ratio as a stop-gradient weight "
        "on every token's log-prob gradient (docs/guides/language-models.md).",
    )
    clip: ClipBoundsSpec | None = Field(
        None,
        description="Asymmetric clip bounds (null: clip_epsilon on both sides); set this or "
        "clip_epsilon, not both.",
    )

    @property
    def clip_bounds(self) -> tuple[float, float]:
        """(low, high) of the clip range the run uses."""
        if self.clip is not None:
            return self.clip.low, self.clip.high
        return self.clip_epsilon.start, self.clip_epsilon.start


class LMAdvantageSpec(AdvantageSpec):
    """How a rollout's scores become advantages: GAE against a value head, or a critic-free
    baseline from the other responses to the same prompt."""

    estimator: Literal["gae", "grpo", "rloo"] = Field(
        "gae",
        description="`gae`: GAE(lambda) against a value head (the critic); `grpo`: the group's "
        "mean (and std) over `group_size` responses to one prompt; `rloo`: the mean of the "
        "other responses (leave-one-out). `grpo` and `rloo` build no value head.",
    )
    group_size: int = Field(
        1,
        ge=1,
        le=256,
        description="Responses sampled per prompt (`grpo` and `rloo` need at least 2; 1 keeps "
        "one response per prompt for `gae`).",
    )
    scale_by_std: bool = Field(
        True,
        description="`grpo` only: divide by the group's std; false gives Dr. GRPO's unscaled "
        "A = R - mean (no bias toward groups that score nearly alike).",
    )


def _named_only(schema: dict[str, Any]) -> None:
    """The JSON Schema of a field that is optional in Python only to be refused with a clear
    message: null is never accepted, so the schema admits the named values alone."""
    schema.pop("anyOf", None)
    schema.pop("default", None)
    schema.update({"type": "string", "enum": ["token_mean", "sequence_mean"]})


def _reduction_required(schema: dict[str, Any]) -> None:
    schema["required"] = sorted({*schema.get("required", []), "reduction"})


class LMSection(StrictModel):
    model_config = ConfigDict(**StrictModel.model_config, json_schema_extra=_reduction_required)

    model: LMModelSpec
    prompts: PromptsSpec
    eval_prompts: PromptsSpec | None = Field(
        None, description="Held-out prompts for evaluation (null: no evaluation)."
    )
    rewards: list[RewardTermSpec] = Field(
        default_factory=list, max_length=16, description="Programmatic reward terms (summed)."
    )
    generation: GenerationSpec = Field(default_factory=GenerationSpec)
    reduction: Literal["token_mean", "sequence_mean"] | None = Field(
        None,
        description="How token losses are averaged; must be named (left out or null, it is "
        "refused). `token_mean` weighs every response token equally; `sequence_mean` every "
        "response equally.",
        json_schema_extra=_named_only,
    )
    kl: LMKLSpec = Field(default_factory=LMKLSpec)
    off_policy: LMOffPolicySpec = Field(default_factory=LMOffPolicySpec)
    lora: LoRASpec | None = Field(
        None, description="Train a LoRA adapter instead of the whole policy (null: full)."
    )
    prompts_per_update: int = Field(
        32,
        ge=1,
        le=4096,
        description="Prompts per rollout; each gets advantage.group_size responses.",
    )


class LMBudgetSpec(StrictModel):
    updates: int = Field(100, ge=1, le=1_000_000, description="PPO updates (rollouts) to run.")
    seed: int = Field(0, ge=0, le=2**31 - 1, description="Seeds python and torch sampling.")


class LMEvaluationSpec(StrictModel):
    every_updates: int = Field(25, ge=0, description="Evaluate every this many updates (0: end).")
    max_prompts: int = Field(200, ge=1, le=100_000, description="Held-out prompts evaluated.")
    table_rows: int = Field(20, ge=0, le=1000, description="Sample generations kept per eval.")


class LMExperimentSpec(WholeSpec):
    """A complete, validated PPO experiment on a language model."""

    name: SafeName
    algorithm: Literal["ppo_lm"] = Field(description="PPO on a local causal language model.")
    lm: LMSection
    update: UpdateSpec = Field(
        default_factory=lambda: UpdateSpec(
            epochs=4, minibatch_size=8, learning_rate=Schedule(start=1e-5)
        ),
        description="K epochs over minibatches of `minibatch_size` responses.",
    )
    surrogate: LMSurrogateSpec = Field(default_factory=lambda: LMSurrogateSpec(clip_value=0.2))
    advantage: LMAdvantageSpec = Field(
        default_factory=lambda: LMAdvantageSpec(gamma=1.0, gae_lambda=1.0),
        description="The estimator (GAE over response tokens, or a group baseline); for GAE "
        "the RLHF column (docs/guides/planning.md): gamma 1.0; lambda 1.0 "
        "(equal scores then give equal advantages, see docs/guides/language-models.md).",
    )
    budget: LMBudgetSpec = Field(default_factory=LMBudgetSpec)
    diagnostics: DiagnosticsSpec = Field(default_factory=DiagnosticsSpec)
    evaluation: LMEvaluationSpec = Field(default_factory=LMEvaluationSpec)
    tracking: TrackingSpec = Field(default_factory=TrackingSpec)
    sweep: SweepSpec | None = Field(
        None, description="Optional variants x grid x seeds (ppo-platform sweep)."
    )
    tune: TuneSpec | None = Field(None, description="Optional Optuna study (ppo-platform tune).")

    @field_validator("surrogate")
    @classmethod
    def _constant_clip_range(cls, surrogate: LMSurrogateSpec) -> LMSurrogateSpec:
        if surrogate.clip_epsilon.schedule != "constant":
            raise ValueError(
                "ppo_lm keeps the clip range constant; set surrogate.clip_epsilon to a number"
            )
        return surrogate

    @property
    def critic_free(self) -> bool:
        """Whether the advantages come from a group baseline (no value head is built)."""
        return self.advantage.estimator != "gae"

    @property
    def responses_per_update(self) -> int:
        return self.lm.prompts_per_update * self.advantage.group_size


def is_lm_data(data: Any) -> bool:
    """Whether plain spec data asks for `algorithm: ppo_lm`."""
    return isinstance(data, dict) and data.get("algorithm") == LM_ALGORITHM


VOCABULARY_NAMES = tuple(sorted(VOCABULARY))
