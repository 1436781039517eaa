"""The experiment spec: a pydantic v2 schema whose JSON Schema is the published contract.

Defaults follow stable-baselines3 and the PPO lessons. Cross-field checks live here; the
refusal rules (unsafe but well-formed settings) live in `rules.py`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from ppo_platform.spec.base import StrictModel, WholeSpec
from ppo_platform.spec.diagnostics import DiagnosticsSpec
from ppo_platform.spec.names import (
    SAFE_NAME_PATTERN,
    SAFE_NAME_RULE,
    TAG_NAME_MAX,
    TAG_NAME_PATTERN,
    TAG_VALUE_MAX,
    tag_problem,
)
from ppo_platform.spec.search import SweepSpec, TuneSpec
from ppo_platform.spec.seeds import MAX_SEEDS, check_seeds, read_seeds
from ppo_platform.spec.wrappers import WrapperSpec, check_wrapper_order, wrapper_shorthand

# gymnasium ids such as "CartPole-v1" or "ppo_platform/GridWorld-v0". No ':' on purpose:
# gymnasium imports the module named before a ':', and nothing in a spec is imported by name.
ENV_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$"
# What every refusal of an env id says about bringing one's own environment.
OWN_ENV_WAY_IN = (
    "register your environment with gymnasium.register in a module, and have the operator name "
    "that module with --env-package MODULE or PPO_PLATFORM_ENV_PACKAGES "
    "(see docs/guides/your-own-environment.md)"
)
OWN_ENV_HINT = f"a spec never names code ('module:Id' is refused): {OWN_ENV_WAY_IN}"

SafeName = Annotated[
    str,
    Field(
        pattern=SAFE_NAME_PATTERN,
        description=SAFE_NAME_RULE,
    ),
]
Scalar = str | int | float | bool | None
MAX_VIDEO_EPISODES = 10


class Schedule(StrictModel):
    """A value that may decay over training: `constant`, or `linear` from `start` to `end`."""

    start: float = Field(gt=0, description="Value at the start of training.")
    schedule: Literal["constant", "linear"] = Field(
        "constant", description="`linear` decays from `start` to `end` over the run."
    )
    end: float = Field(0.0, ge=0, description="Value at the end of training (linear only).")

    @model_validator(mode="before")
    @classmethod
    def _number_means_constant(cls, data: Any) -> Any:
        if isinstance(data, (int, float)) and not isinstance(data, bool):
            return {"start": data, "schedule": "constant"}
        return data


class NormalizeSpec(StrictModel):
    obs: bool = Field(False, description="Running mean/std observation normalization.")
    reward: bool = Field(False, description="Running return-std reward normalization.")
    clip_obs: float = Field(10.0, gt=0, description="Clip normalized observations to +-this.")
    clip_reward: float = Field(10.0, gt=0, description="Clip normalized rewards to +-this.")


class EnvSpec(StrictModel):
    id: str = Field(
        pattern=ENV_ID_PATTERN,
        description="A registered gymnasium environment id (e.g. CartPole-v1, ALE/Pong-v5, "
        f"HalfCheetah-v5). Your own environment: {OWN_ENV_HINT}.",
    )
    kwargs: dict[str, Scalar | list[Scalar]] = Field(
        default_factory=dict, description="Keyword arguments for `gymnasium.make` (plain values)."
    )
    n_envs: int = Field(1, ge=1, le=256, description="N: parallel environments per rollout.")
    vectorization: Literal["auto", "native", "envpool", "dummy", "subproc"] = Field(
        "auto",
        description="How the N envs are stepped: `native`, gymnasium's own vector env (one "
        "object steps all N; CartPole-v1); `envpool`, EnvPool's C++ pool (the `envpool` extra; "
        "ALE games, MuJoCo, classic control); `dummy`, one env per copy in-process; `subproc`, "
        "one process per env; `auto`, native where the env has one and no per-env wrapper "
        "stands in the way, else EnvPool for ALE games and MuJoCo where installed and it "
        "expresses the spec, else dummy.",
    )
    normalize: NormalizeSpec = Field(default_factory=NormalizeSpec)
    wrappers: list[WrapperSpec] = Field(
        default_factory=list,
        max_length=16,
        description="Wrappers applied in order to every training and evaluation env, from a "
        "fixed vocabulary: atari, frame_stack (last), grayscale, resize, time_limit, "
        "clip_action, rescale_action, flatten_observation, or a dotted name an env package "
        "registered. A name alone means default parameters.",
    )

    @field_validator("wrappers", mode="before")
    @classmethod
    def _wrapper_names(cls, value: Any) -> Any:
        return [wrapper_shorthand(item) for item in value] if isinstance(value, list) else value

    @field_validator("wrappers")
    @classmethod
    def _wrapper_order(cls, value: list[Any]) -> list[Any]:
        return check_wrapper_order(value)


class RolloutSpec(StrictModel):
    n_steps: int = Field(2048, ge=1, le=1_000_000, description="T: steps per env per rollout.")


class UpdateSpec(StrictModel):
    epochs: int = Field(
        10,
        ge=1,
        description="K: passes over each rollout (refused above 30).",
        json_schema_extra={"maximum": 30},  # the refusal rule, said by the schema too
    )
    minibatch_size: int = Field(64, ge=1, description="Transitions per gradient step.")
    learning_rate: Schedule = Field(
        default_factory=lambda: Schedule(start=3e-4),
        description="Adam learning rate; a plain number means constant.",
    )
    max_grad_norm: float = Field(0.5, gt=0, description="Global gradient-norm clip.")


class SurrogateSpec(StrictModel):
    clip_epsilon: Schedule = Field(
        default_factory=lambda: Schedule(start=0.2),
        description="Clip range epsilon (refused above 0.3); a plain number means constant.",
    )
    value_coef: float = Field(0.5, ge=0, description="c_v: weight of the value loss.")
    entropy_coef: float = Field(0.0, ge=0, description="c_e: weight of the entropy bonus.")
    normalize_advantage: bool = Field(
        True, description="Normalize advantages per minibatch (refused off for PPO)."
    )
    clip_value: float | None = Field(
        None, gt=0, description="Clip the value update to +-this around the old value; off if null."
    )
    target_kl: float | None = Field(
        None, gt=0, description="Stop the update's epochs early once approx KL exceeds this."
    )


class KLPenaltySpec(StrictModel):
    """Adaptive KL penalty for `algorithm: ppo_kl`: L = L_PG - beta * KL."""

    target: float = Field(0.01, gt=0, description="Target KL per update.")
    beta_init: float = Field(1.0, gt=0, description="Initial penalty coefficient beta.")
    rule: Literal["lesson", "paper"] = Field(
        "lesson",
        description="`lesson`: beta x2 above 2 x target, /2 below target/2; "
        "`paper` (Schulman 2017): the same factors at 1.5 x target and target/1.5.",
    )


class AdvantageSpec(StrictModel):
    gamma: float = Field(0.99, gt=0, le=1, description="Discount factor.")
    gae_lambda: float = Field(0.95, ge=0, le=1, description="GAE(lambda) bias/variance trade-off.")


class PolicySpec(StrictModel):
    net_arch: list[Annotated[int, Field(ge=1, le=4096)]] = Field(
        default_factory=lambda: [64, 64],
        max_length=8,
        description="Hidden layer sizes, shared shape for actor and critic (separate networks).",
    )
    activation: Literal["tanh", "relu", "elu", "leaky_relu"] = Field(
        "tanh", description="Hidden-layer activation (tanh is SB3's default)."
    )
    ortho_init: bool = Field(True, description="Orthogonal initialization (SB3 default).")
    value_net_arch: list[Annotated[int, Field(ge=1, le=4096)]] | None = Field(
        None,
        max_length=8,
        description="Hidden layer sizes of the critic when they differ from the actor's "
        "(null: the same as `net_arch`).",
    )
    log_std_init: float = Field(
        0.0, ge=-20, le=5, description="Initial log std of a Gaussian policy (SB3 default 0)."
    )
    use_sde: bool = Field(
        False,
        description="Generalized state-dependent exploration (gSDE) instead of independent "
        "Gaussian noise; continuous (Box) actions only.",
    )
    sde_sample_freq: int = Field(
        -1, ge=-1, description="With use_sde: resample the noise every n steps (-1: per rollout)."
    )
    device: Literal["auto", "cpu", "cuda"] = Field(
        "auto",
        description="Where the networks train: `auto` (a CUDA GPU for CNN policies when torch "
        "sees one, else the CPU: small MLPs are faster there), `cpu`, or `cuda` (refused at "
        "validation when torch sees no GPU; a Ray task then asks for one).",
    )


class BudgetSpec(StrictModel):
    total_timesteps: int = Field(
        100_000, ge=1, le=10_000_000_000, description="Env steps to train for (all envs)."
    )
    seed: int = Field(0, ge=0, le=2**31 - 1, description="Seeds python, numpy, torch and envs.")
    seeds: list[int] | None = Field(
        None,
        description="Train these seeds instead of `seed`, each an MLflow run of its own under "
        "one parent run (`compare PARENT` scores them): a list [0, 3, 9], one seed 7, or ranges "
        f"'0-15' or '0-3,7'; distinct, >= 0, at most {MAX_SEEDS}. With compiled: auto or on "
        "they train together in one process; the service counts every seed's env steps "
        "against max_env_steps. Not with sweep (sweep.seeds) or tune (its trials' seeds).",
    )

    @field_validator("seeds", mode="before")
    @classmethod
    def _seeds_text_or_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            return read_seeds(value)
        if type(value) is int:  # `--set budget.seeds=7`: one seed
            return check_seeds([value])
        if isinstance(value, list) and all(type(v) is int for v in value):
            return check_seeds(value)
        return value  # anything else: pydantic's own error names the type


class EvaluationSpec(StrictModel):
    every_timesteps: int = Field(
        10_000, ge=0, description="Evaluate every this many env steps (0: only at the end)."
    )
    episodes: int = Field(10, ge=1, le=10_000, description="Episodes per evaluation.")
    deterministic: bool = Field(True, description="Greedy actions during evaluation.")
    run_async: bool = Field(
        False,
        alias="async",
        description="Evaluate in a separate process on a snapshot of the weights while "
        "training goes on; results are logged at the snapshot's env step and equal the "
        "in-process evaluation's (same snapshot, same seed).",
    )
    video: int = Field(
        0,
        ge=0,
        le=MAX_VIDEO_EPISODES,
        description="Record this many episodes of the final policy as MP4 videos, kept with "
        "the run (MLflow artifacts under videos/, shown on the dashboard); 0: off. Needs the "
        "`video` extra and an env that renders `rgb_array` frames.",
    )


class CheckpointSpec(StrictModel):
    every_timesteps: int = Field(
        50_000, ge=0, description="Save a checkpoint every this many env steps (0: only at end)."
    )
    keep_last: int = Field(2, ge=1, description="Periodic checkpoints kept on disk.")


class TrackingSpec(StrictModel):
    experiment: SafeName | None = Field(
        None, description="MLflow experiment name; defaults to the spec's name."
    )
    tags: dict[str, str] = Field(
        default_factory=dict,
        description="Extra MLflow run tags (not mlflow.* or ppo_platform.*: those are reserved). "
        "Names as MLflow accepts them: letters, digits, '_', '-', '.', ' ', ':' and '/'.",
        json_schema_extra={
            "propertyNames": {"pattern": TAG_NAME_PATTERN, "maxLength": TAG_NAME_MAX},
            "additionalProperties": {"type": "string", "maxLength": TAG_VALUE_MAX},
        },
    )

    @field_validator("tags")
    @classmethod
    def _mlflow_stores_the_tags(cls, tags: dict[str, str]) -> dict[str, str]:
        problem = tag_problem(tags)
        if problem:
            raise ValueError(problem)
        return tags


class ExperimentSpec(WholeSpec):
    """A complete, validated PPO experiment."""

    name: SafeName
    env: EnvSpec
    algorithm: Literal["ppo", "ppo_kl", "a2c"] = Field(
        "ppo", description="`ppo` (clipped surrogate), `ppo_kl` (adaptive KL), `a2c` (baseline)."
    )
    rollout: RolloutSpec = Field(default_factory=RolloutSpec)
    update: UpdateSpec = Field(default_factory=UpdateSpec)
    surrogate: SurrogateSpec = Field(default_factory=SurrogateSpec)
    kl_penalty: KLPenaltySpec = Field(default_factory=KLPenaltySpec)
    advantage: AdvantageSpec = Field(default_factory=AdvantageSpec)
    policy: PolicySpec = Field(default_factory=PolicySpec)
    budget: BudgetSpec = Field(default_factory=BudgetSpec)
    diagnostics: DiagnosticsSpec = Field(default_factory=DiagnosticsSpec)
    evaluation: EvaluationSpec = Field(default_factory=EvaluationSpec)
    checkpoints: CheckpointSpec = Field(default_factory=CheckpointSpec)
    tracking: TrackingSpec = Field(default_factory=TrackingSpec)
    compiled: Literal["off", "auto", "on"] = Field(
        "off",
        description="The compiled training path (the `compiled` extra: PPO as one jit-compiled "
        "JAX program over JAX ports of CartPole-v1 and Acrobot-v1, many seeds in one process): "
        "`auto` takes it where the spec can run there and says on the run why not otherwise, "
        "`on` refuses a spec it cannot run, `off` (the default) keeps the torch path.",
    )
    sweep: SweepSpec | None = Field(None, description="Optional grid x seeds (ppo-platform sweep).")
    tune: TuneSpec | None = Field(None, description="Optional Optuna study (ppo-platform tune).")

    @field_validator("env", mode="before")
    @classmethod
    def _env_id_shorthand(cls, value: Any) -> Any:
        return {"id": value} if isinstance(value, str) else value

    @field_validator("compiled", mode="before")
    @classmethod
    def _yaml_on_off(cls, value: Any) -> Any:
        # YAML 1.1 (PyYAML, so `compiled: on` and `--set compiled=on`) reads on/off as booleans.
        return {True: "on", False: "off"}.get(value, value) if isinstance(value, bool) else value

    @property
    def batch_size(self) -> int:
        """Transitions per rollout: N envs x T steps."""
        return self.env.n_envs * self.rollout.n_steps

    def with_seed(self, seed: int) -> ExperimentSpec:
        """This spec as one run of seed `seed` (a batch's member: no `budget.seeds`)."""
        budget = self.budget.model_copy(update={"seed": seed, "seeds": None})
        return self.model_copy(update={"budget": budget})

    def hashed(self) -> dict[str, Any]:
        """What the hash covers (`WholeSpec.spec_hash`): the resolved spec without its search
        sections, and fields added later left out at their defaults."""
        training = super().hashed()
        # Where the evaluation runs, whether it is filmed and on which device the networks
        # train change no hyperparameter: left out at their defaults (earlier specs' hashes).
        training["evaluation"] = {
            k: v for k, v in training["evaluation"].items() if k not in ("async", "video") or v
        }
        training["policy"] = {
            k: v for k, v in training["policy"].items() if k != "device" or v != "auto"
        }
        # Which path trains (torch or compiled) is no hyperparameter: the run's tag says it.
        training.pop("compiled", None)
        # The seeds of a batch name other runs (each its own seed), as a sweep's seeds do.
        training["budget"].pop("seeds", None)
        # Specs without wrappers (and with the default clip-fraction rule) keep the hashes
        # they had before those fields existed.
        training["env"] = {k: v for k, v in training["env"].items() if k != "wrappers" or v}
        training["diagnostics"] = {
            k: v
            for k, v in training["diagnostics"].items()
            if k != "clip_fraction_needs_kl" or not v
        }
        return training


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """{'a': {'b': 1}} -> {'a.b': 1}; lists stay values."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flatten(value, path + "."))
        else:
            flat[path] = value
    return flat
