"""The spec's N envs as one native vector env (gymnasium's own, or EnvPool's), adapted to SB3's
VecEnv conventions by `envs.vector` / `envs.envpool_vec` (see `envs.vectorization` for when
each is chosen)."""

from __future__ import annotations

import warnings
from typing import Any

from ppo_platform.envs import envpool_support
from ppo_platform.spec.experiment import ExperimentSpec


def native_vec_env(spec: ExperimentSpec, n_envs: int) -> Any:
    """gymnasium's vector env for the id (`make_vec`, vector entry point), SB3-adapted."""
    import gymnasium

    from ppo_platform.envs.vector import NativeVecEnv

    with warnings.catch_warnings():  # "out of date" notices: the checks say what matters
        warnings.simplefilter("ignore")
        kwargs: dict[str, Any] = dict(spec.env.kwargs)
        env = gymnasium.make_vec(
            spec.env.id, num_envs=n_envs, vectorization_mode="vector_entry_point", **kwargs
        )
    return NativeVecEnv(env)


def envpool_vec_env(spec: ExperimentSpec, n_envs: int) -> Any:
    """EnvPool's pool of the spec's env with the spec's preprocessing, SB3-adapted; its seed is
    given at the first reset (`seed()` then `reset()`, as for every VecEnv)."""
    from ppo_platform.envs.envpool_vec import EnvPoolVecEnv

    options = envpool_support.options(spec)
    assert not isinstance(options, str), options  # refused at validation
    return EnvPoolVecEnv(
        envpool_support.task_id(spec.env.id),
        n_envs,
        options,
        envpool_support.episode_length_scale(spec),
    )


def vector_level_wrappers(spec: ExperimentSpec, mode: str) -> list[Any]:
    """The wrappers left for the vector level: EnvPool stacks an ALE game's frames itself."""
    if mode == "envpool" and spec.env.id.startswith(envpool_support.ALE_PREFIX):
        return []
    return list(spec.env.wrappers)
