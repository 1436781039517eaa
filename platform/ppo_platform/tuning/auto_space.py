"""`--space auto`: a default search space around a spec's planned values.

Ranges stay inside the refusal limits (K <= 30, epsilon <= 0.3), minibatch choices never
exceed the smallest rollout batch the space can produce, and no rollout is longer than the
budget, so every sampled spec is valid.
"""

from __future__ import annotations

from typing import Any

from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.loader import validate_data
from ppo_platform.spec.rules import MAX_CLIP_EPSILON, MAX_EPOCHS
from ppo_platform.spec.search import TuneSpec

GAMMAS = [0.9, 0.95, 0.98, 0.99, 0.995, 0.999]
GAE_LAMBDAS = [0.8, 0.9, 0.92, 0.95, 0.98, 1.0]


def _choices(values: list[Any]) -> dict[str, Any]:
    unique = sorted(set(values))
    return {"type": "categorical", "choices": unique}


def auto_space(spec: ExperimentSpec) -> dict[str, dict[str, Any]]:
    """Dotted path -> distribution (plain data, as in a spec's `tune.space`)."""
    lr = spec.update.learning_rate.start
    epochs = spec.update.epochs
    n_steps = spec.rollout.n_steps
    minibatch = spec.update.minibatch_size
    budget = spec.budget.total_timesteps  # a longer rollout than the budget would train past it
    n_steps_choices = sorted(
        {
            n
            for n in (n_steps, n_steps * 2, n_steps * 4)
            if n == n_steps or spec.env.n_envs * n <= budget
        }
    )
    if spec.env.n_envs * (n_steps // 2) >= minibatch:  # shorter rollouts only if they still fit
        n_steps_choices.insert(0, n_steps // 2)
    smallest_batch = spec.env.n_envs * n_steps_choices[0]
    minibatch_choices = sorted(
        {m for m in (minibatch // 2, minibatch, minibatch * 2) if 1 <= m <= smallest_batch}
        or {smallest_batch}
    )
    width = spec.policy.net_arch[0] if spec.policy.net_arch else 64
    depth = max(1, len(spec.policy.net_arch))
    space: dict[str, dict[str, Any]] = {
        "update.learning_rate.start": {"type": "float", "low": lr / 3, "high": lr * 3, "log": True},
        "update.epochs": {
            "type": "int",
            "low": max(1, epochs // 2),
            "high": min(MAX_EPOCHS, max(2, 2 * epochs)),
        },
        "update.minibatch_size": _choices(minibatch_choices),
        "rollout.n_steps": _choices(n_steps_choices),
        "advantage.gamma": _choices([*GAMMAS, spec.advantage.gamma]),
        "advantage.gae_lambda": _choices([*GAE_LAMBDAS, spec.advantage.gae_lambda]),
        "policy.net_arch": {
            "type": "categorical",
            "choices": [[w] * depth for w in sorted({max(8, width // 2), width, width * 2})],
        },
    }
    if spec.algorithm in ("ppo", "ppo_kl"):
        space["surrogate.clip_epsilon.start"] = {
            "type": "float",
            "low": 0.1,
            "high": MAX_CLIP_EPSILON,
        }
    entropy = spec.surrogate.entropy_coef
    space["surrogate.entropy_coef"] = (
        _choices([0.0, 0.001, 0.01])
        if entropy == 0
        else {"type": "float", "low": entropy / 3, "high": entropy * 3, "log": True}
    )
    return space


def with_auto_space(spec: ExperimentSpec) -> ExperimentSpec:
    """The spec with its tune space replaced by `auto_space` (other tune settings kept)."""
    data = spec.resolved()
    tune = data.get("tune") or TuneSpec().model_dump(mode="json")
    tune["space"] = auto_space(spec)
    data["tune"] = tune
    return validate_data(data, source="--space auto")
