"""A worker's warm-up before its first run: torch's and SB3's first-use costs paid ahead.

The first model a process builds and trains pays for lazy imports and first-use set-up (the
optimizer's, autograd's, the distributions'), seconds on a busy machine. A pooled worker
(sweep members) pays them while its caller is still setting up, with one throwaway update of
the spec it will train: one rollout and one update, recorded nowhere.
"""

from __future__ import annotations

from ppo_platform import tracing
from ppo_platform.envs.build import build_train_env
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.training.algorithms import build_model


def warm_up(spec: ExperimentSpec) -> None:
    """Build `spec`'s env and model and run one rollout and one update (`learn(1)`)."""
    env = build_train_env(spec)
    try:
        build_model(spec, env).learn(1)
    finally:
        env.close()
    tracing.mark("warm-up: one update done")
