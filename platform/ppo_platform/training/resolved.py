"""What a run resolved when it started, recorded with it (docs/guides/spec.md, "What a run
records"): the vectorization `auto` chose and why, the env packages it imported (with their
versions), the versions of the libraries that train, the device and the torch threads. A
language-model run (docs/guides/language-models.md) records its model instead of envs: the
config it was built from, architecture, parameter count, dtype, tokenizer, reference and reward.

Kept as MLflow tags (`ppo_platform.resolved.<key>`), as `resolved.json` in the run folder (and
logged beside the run's other artifacts), said on the console at the start, and stored with a
REST job (`status`, the dashboard)."""

from __future__ import annotations

import functools
import json
from importlib import metadata
from pathlib import Path
from typing import Any

from ppo_platform.envs import envpool_support
from ppo_platform.envs.packages import imported_env_packages
from ppo_platform.envs.vectorization import native_obstacle, resolve
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.lm import LMExperimentSpec

RESOLVED_FILE = "resolved.json"
TAG_PREFIX = "ppo_platform.resolved."
# The distributions whose versions decide what a run computes (missing ones: "not installed").
LIBRARIES = (
    "stable-baselines3",
    "gymnasium",
    "torch",
    "numpy",
    "ale-py",
    "mujoco",
    "envpool",
    "transformers",
)
# What a language-model run computes with.
LM_LIBRARIES = ("torch", "transformers", "tokenizers", "safetensors", "numpy")


def version_of(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


@functools.cache
def _distributions_by_module() -> dict[str, list[str]]:
    """Which distributions provide each top-level module, read once per process: it reads
    every installed distribution's file list (about 1 s here), and a batch of seeds asks for
    each of its runs."""
    return dict(metadata.packages_distributions())


def package_version(module: str) -> str:
    """`module`'s distribution version, or where it was imported from (a plain module)."""
    top = module.split(".")[0]
    names = _distributions_by_module().get(top, [])
    if names:
        return version_of(names[0])
    return "local module (no installed distribution)"


def vectorization_reason(spec: ExperimentSpec, own_env: bool) -> str:
    """Why the run's envs are vectorized the way they are."""
    chosen = resolve(spec, own_env)
    if spec.env.vectorization != "auto":
        return "set in the spec"
    if own_env:
        return "auto: your own env (make_env) runs per env"
    if chosen == "native":
        return f"auto: {spec.env.id} has a native vector env"
    native = native_obstacle(spec)
    if chosen == "envpool":
        return f"auto: EnvPool runs {spec.env.id} ({native})"
    envpool = (
        envpool_support.outside_auto_scope(spec)
        or envpool_support.obstacle(spec)
        or envpool_support.AUTO_SCOPE
    )
    return f"auto: no native vector env ({native}); not EnvPool ({envpool})"


def resolved_setup(spec: ExperimentSpec, model: Any, own_env: bool = False) -> dict[str, str]:
    """The run's resolved setup as flat text fields."""
    import torch

    packages = imported_env_packages()
    resolved = {
        "vectorization": resolve(spec, own_env),
        "vectorization_reason": vectorization_reason(spec, own_env),
        "env_packages": ", ".join(f"{p} {package_version(p)}" for p in packages) or "none",
        "device": str(model.device),
        "torch_threads": str(torch.get_num_threads()),
    }
    resolved.update({f"version.{name}": version_of(name) for name in LIBRARIES})
    return resolved


def _parameters(module: Any) -> int:
    return sum(p.numel() for p in module.parameters())


def _first_parameter(module: Any) -> Any:
    return next(iter(module.parameters()))


def _describe_model(module: Any) -> str:
    """`LlamaForCausalLM, 123456 parameters`: the class loaded and its size."""
    return f"{type(module).__name__}, {_parameters(module)} parameters"


def lm_reference(spec: LMExperimentSpec, trainer: Any) -> str:
    """What the KL penalty's reference is, in words."""
    reference = spec.lm.model.reference
    if reference == "none":
        return "none (no reference: no KL penalty)"
    if reference == "initial":
        return "initial (a frozen copy of the policy's starting weights)"
    return f"{reference} ({_describe_model(trainer.reference)})"


def lm_reward(spec: LMExperimentSpec, trainer: Any) -> str:
    """Where the scores come from: the reward model, or the weighted sum of reward terms."""
    model = spec.lm.model.reward_model
    if model is not None:
        return f"reward model {model} ({_describe_model(trainer.reward.model)})"
    return " + ".join(
        f"{term.weight:g} x {term.name}"
        + (f" {json.dumps(term.params, sort_keys=True)}" if term.params else "")
        for term in spec.lm.rewards
    )


def lm_advantage(spec: LMExperimentSpec) -> str:
    """The advantage estimator in words: what baseline, over how many responses per prompt."""
    advantage = spec.advantage
    groups = f"{advantage.group_size} responses per prompt"
    if advantage.estimator == "gae":
        return (
            f"gae (gamma {advantage.gamma:g}, lambda {advantage.gae_lambda:g}) against a value "
            f"head, {groups}, normalized over the batch"
        )
    if advantage.estimator == "rloo":
        others = advantage.group_size - 1
        return f"rloo: R_i minus the mean of the other {others} ({groups}); no value head"
    scale = "mean and std" if advantage.scale_by_std else "mean only (Dr. GRPO: no std division)"
    return f"grpo: the group's {scale} over {groups}; no value head"


def lm_objective(spec: LMExperimentSpec) -> str:
    """The policy objective and its clip range, in words."""
    surrogate = spec.surrogate
    low, high = surrogate.clip_bounds
    shape = "symmetric" if low == high else "Clip-Higher"
    what = {
        "ppo": "PPO-Clip per token",
        "gspo": "GSPO: one length-normalised ratio per response, clipped per response",
        "cispo": "CISPO: clipped stop-gradient weight on every token's log-prob gradient",
    }[surrogate.objective]
    return f"{what}; ratio in [{1 - low:g}, {1 + high:g}] ({shape}); {spec.lm.reduction}"


def lm_kl(spec: LMExperimentSpec) -> str:
    """The KL term to the reference: estimator, placement, beta (fixed, adaptive, or none)."""
    kl = spec.lm.kl
    if spec.lm.model.reference == "none":
        return "none (no reference)"
    if kl.beta == 0 and kl.target is None:
        return f"beta 0: no KL term (lm/kl_ref, {kl.estimator}, is still measured)"
    where = "in the reward (r_t -= beta KL_t)" if kl.placement == "reward" else "in the loss"
    control = f"fixed beta {kl.beta:g}"
    if kl.target is not None:
        control = f"adaptive beta from {kl.beta:g} to target {kl.target:g} (rule {kl.rule})"
    return f"{kl.estimator} {where}, {control}"


def lm_resolved_setup(spec: LMExperimentSpec, trainer: Any) -> dict[str, str]:
    """A language-model run's resolved setup as flat text fields: device, dtype, threads, the
    policy (its config, architecture, parameters), tokenizer, reference, reward, versions."""
    import torch

    from ppo_platform.trainers.lm.policy import max_positions

    lm, tokenizer = trainer.policy.lm, trainer.tokenizer
    config, first = lm.config, _first_parameter(lm)
    pad = tokenizer.pad_token
    resolved = {
        "device": str(first.device),
        "dtype": str(first.dtype).removeprefix("torch."),
        "torch_threads": str(torch.get_num_threads()),
        "model.policy": spec.lm.model.policy,
        "model.config": f"{spec.lm.model.policy}/config.json (model_type "
        f"{config.model_type}, saved by transformers {config.transformers_version})",
        "model.architecture": type(lm).__name__,
        "model.parameters": str(_parameters(lm)),
        "model.value_head_parameters": (
            str(_parameters(trainer.policy.value_head))
            if trainer.policy.value_head is not None
            else f"none (advantage.estimator {spec.advantage.estimator}: no critic)"
        ),
        "model.max_positions": str(max_positions(config) or "not stated"),
        "tokenizer": f"{type(tokenizer).__name__}, {len(tokenizer)} tokens, pad {pad!r}"
        + (" (its EOS token)" if pad == tokenizer.eos_token else "")
        + f", EOS {tokenizer.eos_token!r}",
        "reference": lm_reference(spec, trainer),
        "reward": lm_reward(spec, trainer),
        "advantage": lm_advantage(spec),
        "objective": lm_objective(spec),
        "kl": lm_kl(spec),
    }
    resolved.update({f"version.{name}": version_of(name) for name in LM_LIBRARIES})
    return resolved


def record_resolved(tracker: Any, resolved: dict[str, str]) -> Path:
    """Tags on the run, `resolved.json` in its folder (logged as an artifact too)."""
    tracker.set_tags({f"{TAG_PREFIX}{key}": value for key, value in resolved.items()})
    path = Path(tracker.run_dir) / RESOLVED_FILE
    path.write_text(json.dumps(resolved, indent=2, sort_keys=True) + "\n")
    tracker.log_artifact(path)
    return path
