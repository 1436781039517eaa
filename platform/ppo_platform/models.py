"""Map a spec onto stable-baselines3 keyword arguments, and build the model for it."""

from __future__ import annotations

from typing import Any

import torch
from gymnasium import spaces
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.preprocessing import is_image_space
from stable_baselines3.common.vec_env import VecEnv

from trainers.ppo import MonitoredPPO
from trainers.schedules import ConstantSchedule, LinearSchedule

from .errors import SpecError, SpecIssue
from .spec import ExperimentSpec, Schedule

ACTIVATIONS: dict[str, type[torch.nn.Module]] = {
    "tanh": torch.nn.Tanh,
    "relu": torch.nn.ReLU,
    "elu": torch.nn.ELU,
    "leaky_relu": torch.nn.LeakyReLU,
}


def to_schedule(schedule: Schedule) -> ConstantSchedule | LinearSchedule:
    if schedule.schedule == "linear":
        return LinearSchedule(schedule.start, schedule.end)
    return ConstantSchedule(schedule.start)


def policy_name(observation_space: spaces.Space) -> str:
    if isinstance(observation_space, spaces.Dict):
        return "MultiInputPolicy"
    if is_image_space(observation_space, check_channels=False):
        return "CnnPolicy"
    return "MlpPolicy"


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
        "gamma": spec.advantage.gamma,
        "gae_lambda": spec.advantage.gae_lambda,
        "seed": spec.budget.seed,
        "policy_kwargs": {
            "net_arch": {"pi": list(spec.policy.net_arch), "vf": list(spec.policy.net_arch)},
            "activation_fn": ACTIVATIONS[spec.policy.activation],
            "ortho_init": spec.policy.ortho_init,
        },
    }


def build_model(spec: ExperimentSpec, env: VecEnv) -> BaseAlgorithm:
    """A fresh, seeded SB3 model for the spec's algorithm on `env` (CPU)."""
    if spec.algorithm != "ppo":
        raise SpecError([SpecIssue("algorithm", "is not available in this build.", spec.algorithm,
                                   fix="use algorithm: ppo.")])
    return MonitoredPPO(policy_name(env.observation_space), env, device="cpu", verbose=0,
                        **ppo_kwargs(spec))


def load_model(spec: ExperimentSpec, path: str, env: VecEnv) -> BaseAlgorithm:
    """Load a checkpoint saved by `build_model`'s model class."""
    return MonitoredPPO.load(path, env=env, device="cpu")
