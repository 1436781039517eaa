"""Map a spec onto stable-baselines3 keyword arguments, and build the model for it.

`algorithm: ppo` -> PlatformPPO (clipped surrogate), `ppo_kl` -> PlatformPPO with the adaptive
KL penalty as its objective, `a2c` -> PlatformA2C (baseline). All three report each update's
metrics to the runner's listeners. The spec names the algorithm, so it also picks the class a
checkpoint is loaded with.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from gymnasium import spaces
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.preprocessing import is_image_space
from stable_baselines3.common.utils import ConstantSchedule, LinearSchedule
from stable_baselines3.common.vec_env import VecEnv

from ppo_platform.errors import SpecError, SpecIssue
from ppo_platform.spec.experiment import ExperimentSpec, Schedule
from ppo_platform.tracking.tags import FAST_PATHS
from ppo_platform.trainers.a2c import PlatformA2C
from ppo_platform.trainers.policy_objectives import KLPenaltyObjective
from ppo_platform.trainers.ppo import PlatformPPO

ACTIVATIONS: dict[str, type[torch.nn.Module]] = {
    "tanh": torch.nn.Tanh,
    "relu": torch.nn.ReLU,
    "elu": torch.nn.ELU,
    "leaky_relu": torch.nn.LeakyReLU,
}


def to_schedule(schedule: Schedule) -> ConstantSchedule | LinearSchedule:
    """SB3's own schedule classes: a saved model.zip pickles them, and stock SB3 loads it."""
    if schedule.schedule == "linear":
        return LinearSchedule(schedule.start, schedule.end, end_fraction=1.0)
    return ConstantSchedule(schedule.start)


def policy_name(observation_space: spaces.Space) -> str:
    if isinstance(observation_space, spaces.Dict):
        return "MultiInputPolicy"
    if is_image_space(observation_space, check_channels=False):
        return "CnnPolicy"
    return "MlpPolicy"


def training_device(spec: ExperimentSpec, observation_space: spaces.Space) -> str:
    """The torch device the spec's networks train on: `auto` picks CUDA for a CNN policy when
    torch sees a GPU (an MLP of a few thousand weights is faster on the CPU), else the CPU."""
    if spec.policy.device != "auto":
        return spec.policy.device
    cnn = policy_name(observation_space) == "CnnPolicy"
    return "cuda" if cnn and torch.cuda.is_available() else "cpu"


def _policy_kwargs(spec: ExperimentSpec) -> dict[str, Any]:
    policy = spec.policy
    value_arch = policy.net_arch if policy.value_net_arch is None else policy.value_net_arch
    return {
        "net_arch": {"pi": list(policy.net_arch), "vf": list(value_arch)},
        "activation_fn": ACTIVATIONS[policy.activation],
        "ortho_init": policy.ortho_init,
        "log_std_init": policy.log_std_init,
    }


def ppo_kwargs(spec: ExperimentSpec) -> dict[str, Any]:
    """Every spec field that SB3's PPO takes, under SB3's name."""
    return {
        "n_steps": spec.rollout.n_steps,
        "batch_size": spec.update.minibatch_size,
        "n_epochs": spec.update.epochs,
        "learning_rate": to_schedule(spec.update.learning_rate),
        "max_grad_norm": spec.update.max_grad_norm,
        "clip_range": to_schedule(spec.surrogate.clip_epsilon),
        "clip_range_vf": spec.surrogate.clip_value,
        "vf_coef": spec.surrogate.value_coef,
        "ent_coef": spec.surrogate.entropy_coef,
        "normalize_advantage": spec.surrogate.normalize_advantage,
        "target_kl": spec.surrogate.target_kl,
        "kl_source": spec.diagnostics.kl_source,
        "gamma": spec.advantage.gamma,
        "gae_lambda": spec.advantage.gae_lambda,
        "seed": spec.budget.seed,
        "use_sde": spec.policy.use_sde,
        "sde_sample_freq": spec.policy.sde_sample_freq,
        "policy_kwargs": _policy_kwargs(spec),
    }


def ppo_kl_kwargs(spec: ExperimentSpec) -> dict[str, Any]:
    """PPO's arguments plus the adaptive KL penalty (the clip range only measures clip fraction)."""
    return {
        **ppo_kwargs(spec),
        "objective": KLPenaltyObjective.adaptive(
            spec.kl_penalty.target, spec.kl_penalty.beta_init, spec.kl_penalty.rule
        ),
    }


def a2c_kwargs(spec: ExperimentSpec) -> dict[str, Any]:
    """The spec fields that apply to A2C (rules.py refuses the others when they are set).

    The optimizer stays SB3's A2C default, RMSprop (alpha 0.99, eps 1e-5), as in the A2C paper.
    """
    return {
        "n_steps": spec.rollout.n_steps,
        "learning_rate": to_schedule(spec.update.learning_rate),
        "max_grad_norm": spec.update.max_grad_norm,
        "vf_coef": spec.surrogate.value_coef,
        "ent_coef": spec.surrogate.entropy_coef,
        "normalize_advantage": spec.surrogate.normalize_advantage,
        "gamma": spec.advantage.gamma,
        "gae_lambda": spec.advantage.gae_lambda,
        "seed": spec.budget.seed,
        "use_sde": spec.policy.use_sde,
        "sde_sample_freq": spec.policy.sde_sample_freq,
        "policy_kwargs": _policy_kwargs(spec),
    }


ALGORITHMS: dict[str, tuple[type[BaseAlgorithm], Callable[[ExperimentSpec], dict[str, Any]]]] = {
    "ppo": (PlatformPPO, ppo_kwargs),
    "ppo_kl": (PlatformPPO, ppo_kl_kwargs),
    "a2c": (PlatformA2C, a2c_kwargs),
}


def model_class(spec: ExperimentSpec) -> type[BaseAlgorithm]:
    """The trainer class of the spec's algorithm."""
    if spec.algorithm not in ALGORITHMS:
        raise SpecError(
            [
                SpecIssue(
                    "algorithm",
                    "is not available in this build.",
                    spec.algorithm,
                    fix=f"use one of {sorted(ALGORITHMS)}.",
                )
            ]
        )
    return ALGORITHMS[spec.algorithm][0]


def model_kwargs(spec: ExperimentSpec) -> dict[str, Any]:
    """The keyword arguments of `model_class(spec)` for the spec."""
    model_class(spec)  # unknown algorithm: the same clear error
    return ALGORITHMS[spec.algorithm][1](spec)


def build_model(spec: ExperimentSpec, env: VecEnv) -> BaseAlgorithm:
    """A fresh, seeded model of the spec's algorithm on `env`, on its `training_device`."""
    cls = model_class(spec)
    device = training_device(spec, env.observation_space)
    model = cls(
        policy_name(env.observation_space), env, device=device, verbose=0, **model_kwargs(spec)
    )
    return _quiet(model)


def _quiet(model: BaseAlgorithm) -> BaseAlgorithm:
    """A logger with no outputs: metrics flow through the update listeners, and SB3's default
    logger would leave an empty SB3-<timestamp> folder in $TMPDIR for every run."""
    model.set_logger(Logger(folder=None, output_formats=[]))
    return model


def load_model(spec: ExperimentSpec, path: str, env: VecEnv) -> BaseAlgorithm:
    """Load a checkpoint of the spec's algorithm (saved by the class `build_model` used).

    `force_reset`: `env` is freshly built, so the first rollout starts from its reset, not
    from the observation stored in the checkpoint.
    """
    device = training_device(spec, env.observation_space)
    return _quiet(model_class(spec).load(path, env=env, device=device, force_reset=True))


def fast_paths_tag(model: Any) -> dict[str, str]:
    """The run's record of its trainer's fast paths (`on` or `off (why)`), if it has them."""
    fast = getattr(model, "fast_paths", None)
    return {} if fast is None else {FAST_PATHS: fast.describe()}
