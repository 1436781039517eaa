"""Whether a spec can train on the compiled path (trainers/compiled), and why not.

The compiled program implements PPO's clipped update on the JAX ports of CartPole-v1 and
Acrobot-v1 with SB3's MlpPolicy; every spec feature it does not implement is named here, so
`compiled: auto` falls back to the torch path with the reason on the run and `compiled: on`
refuses the spec with it.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from ppo_platform.errors import SpecIssue, TrainingError
from ppo_platform.spec.experiment import ExperimentSpec

# trainers/compiled/envs.py's ports (named here so the choice needs no jax import).
COMPILED_ENV_IDS = ("CartPole-v1", "Acrobot-v1")
ACTIVATIONS = ("tanh", "relu")
MAX_CHUNK = 64  # updates per call of the compiled program: the monitor reads each chunk


def compiled_problem(spec: ExperimentSpec) -> str:
    """Why `spec` cannot train on the compiled path ("" when it can)."""
    checks = [
        (spec.algorithm != "ppo", f"algorithm {spec.algorithm} (the compiled path runs ppo)"),
        (
            spec.env.id not in COMPILED_ENV_IDS,
            f"env {spec.env.id} has no JAX port (ports: {', '.join(COMPILED_ENV_IDS)})",
        ),
        (bool(spec.env.kwargs), "env.kwargs change the env the JAX port implements"),
        (bool(spec.env.wrappers), "env.wrappers run in Python"),
        (spec.env.normalize.obs or spec.env.normalize.reward, "env.normalize (VecNormalize)"),
        (spec.env.vectorization != "auto", f"env.vectorization {spec.env.vectorization}"),
        (spec.policy.activation not in ACTIVATIONS, f"policy.activation {spec.policy.activation}"),
        (spec.policy.device == "cuda", "policy.device cuda (the compiled path runs on the CPU)"),
        (spec.surrogate.target_kl is not None, "surrogate.target_kl (early stopping)"),
        (spec.evaluation.run_async, "evaluation.async"),
        (spec.evaluation.video > 0, "evaluation.video"),
        (
            spec.batch_size % spec.update.minibatch_size != 0,
            f"update.minibatch_size {spec.update.minibatch_size} does not divide the rollout "
            f"({spec.batch_size})",
        ),
        (importlib.util.find_spec("jax") is None, "jax is not installed (the `compiled` extra)"),
    ]
    return "; ".join(reason for failed, reason in checks if failed)


def uncompilable_issue(spec: ExperimentSpec, where: str = "") -> SpecIssue | None:
    """`compiled: on` where the compiled path cannot run `spec`, as bad input (`where`: e.g.
    "grid point update.epochs=4", said in the message); None when the spec is fine."""
    problem = compiled_problem(spec) if spec.compiled == "on" else ""
    if not problem:
        return None
    return SpecIssue(
        "compiled",
        f"the compiled path cannot run this spec{f' at {where}' if where else ''}: {problem}.",
        "on",
        fix="set compiled: auto (the torch path then trains it) or change what is named.",
    )


def training_path(spec: ExperimentSpec, make_env: Any = None) -> dict[str, str]:
    """Which path trains `spec` and why, as the run records it; `compiled: on` with a spec the
    compiled path cannot run is refused, naming what stands in the way."""
    if spec.compiled == "off":
        return {"training_path": "torch", "training_path_reason": "compiled: off"}
    problem = compiled_problem(spec) or ("your own env (make_env)" if make_env else "")
    if not problem:
        return {"training_path": "compiled", "training_path_reason": f"compiled: {spec.compiled}"}
    if spec.compiled == "on":
        raise TrainingError(
            f"compiled: on, but the compiled path cannot run this spec: {problem}. Set "
            "compiled: auto (the torch path then trains it) or change what is named."
        )
    return {"training_path": "torch", "training_path_reason": f"compiled: auto, but {problem}"}
