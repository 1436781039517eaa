"""Vectorized gymnasium environments built from a spec (training env + evaluation env).

Both are built the same way (`ppo_platform.envs`): the spec's env id made by one picklable
factory that imports the operator's env packages first, its `env.wrappers` applied to each env,
then frame stacking and channels-first images at the vector level, then VecNormalize. Evaluation
therefore sees exactly the observations training sees.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv, VecNormalize

from ppo_platform.envs.apply import wrap_vec_env
from ppo_platform.envs.factory import EnvFactory
from ppo_platform.envs.faults import RaiseEnvFaults
from ppo_platform.envs.ids import check_spec_env, normalized_keys, refuse_unnormalizable
from ppo_platform.envs.native import (
    envpool_vec_env,
    native_vec_env,
    vector_level_wrappers,
)
from ppo_platform.envs.shipping import check_shippable
from ppo_platform.envs.vectorization import check_vectorization, resolve
from ppo_platform.errors import BadInputError, SpecError, SpecIssue
from ppo_platform.settings import get_settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.resources import budget_refusals, observation_size_of
from ppo_platform.spec.wrappers import frame_stack_of
from ppo_platform.trainers.fast import ENV_VAR, fast_paths
from ppo_platform.trainers.fast.dummy_vec_env import LeanDummyVecEnv
from ppo_platform.trainers.fast.switch import FIX, FastPathsValueError
from ppo_platform.trainers.fast.vec_normalize import LeanVecNormalize

EVAL_SEED_OFFSET = 10_000
# Evaluation steps up to this many envs together (one batched forward pass per step); more
# episodes than that run several per env.
EVAL_MAX_ENVS = 16

EnvMaker = Callable[[], Any]  # a notebook user's own env factory (see run_spec's make_env)


def env_factory(spec: ExperimentSpec, make_env: EnvMaker | None = None) -> EnvFactory:
    """The factory of one env of `spec` (the operator's env packages travel with it)."""
    return EnvFactory(
        spec.env.id,
        dict(spec.env.kwargs),
        tuple(spec.env.wrappers),
        get_settings().env_packages,
        make_env,
    )


def _vec_env(
    spec: ExperimentSpec,
    n_envs: int,
    seed: int,
    subproc: bool,
    make_env: EnvMaker | None,
    render_mode: str | None = None,
) -> VecEnv:
    """The spec's N envs as its `env.vectorization` resolves, seeded with `seed` (env i with
    seed + i per env). Per env always: watching (`render_mode`), a notebook's own env, and
    evaluation (`subproc` False) of a native env, so eval env i plays the episode a single env
    seeded seed + i plays (same dynamics); EnvPool evaluates in EnvPool (same preprocessing)."""
    mode = "dummy" if render_mode is not None else resolve(spec, own_env=make_env is not None)
    if mode == "native" and not subproc:
        mode = "dummy"
    if mode in ("native", "envpool"):
        venv = native_vec_env(spec, n_envs) if mode == "native" else envpool_vec_env(spec, n_envs)
        venv.seed(seed)
        venv = RaiseEnvFaults(venv, spec.env.id, raises_own=True)
        return wrap_vec_env(venv, vector_level_wrappers(spec, mode))
    wants_subproc = subproc and mode == "subproc" and n_envs > 1
    factory = env_factory(spec, make_env)
    if render_mode is not None:  # training and evaluation render nothing
        factory = dataclasses.replace(
            factory, kwargs={**factory.kwargs, "render_mode": render_mode}, keep_frames=True
        )
    if wants_subproc and make_env is not None:
        check_shippable(make_env, "env.vectorization: subproc")
    factories = [dataclasses.replace(factory, action_seed=seed + i) for i in range(n_envs)]
    dummy = LeanDummyVecEnv if fast_paths().on else DummyVecEnv
    venv = (SubprocVecEnv if wants_subproc else dummy)(factories)  # type: ignore[arg-type]
    venv.seed(seed)
    return wrap_vec_env(RaiseEnvFaults(venv, spec.env.id), spec.env.wrappers)


def check_fast_paths() -> None:
    """Refuse a `PPO_PLATFORM_FAST_PATHS` that is neither on nor off (exit 2), before a run."""
    try:
        fast_paths()
    except FastPathsValueError as error:
        issue = SpecIssue(ENV_VAR, "is neither on nor off.", error.value, fix=FIX)
        raise BadInputError([issue]) from None


def _check_own_env(spec: ExperimentSpec, factory: EnvFactory) -> None:
    """A notebook user's env: the resource budget with its real (wrapped) sizes, and
    observations that env.normalize.obs can normalize."""
    env = factory()
    try:
        observation = observation_size_of(env.observation_space)
        action = observation_size_of(env.action_space)
        refuse_unnormalizable(spec, env.observation_space, None)
    finally:
        env.close()
    issues = budget_refusals(spec, observation * frame_stack_of(spec.env.wrappers), action)
    if issues:
        raise SpecError(issues)


def build_train_env(
    spec: ExperimentSpec, normalize_stats: Path | None = None, make_env: EnvMaker | None = None
) -> VecEnv:
    """N envs of the spec, wrapped in VecNormalize when asked (statistics restored if given).

    `make_env` (notebooks): returns one env, made instead of `spec.env.id` and wrapped as any;
    shipped by value to subproc envs and async evaluation, or refused if it cannot be pickled.
    """
    check_fast_paths()
    if make_env is None:
        check_spec_env(spec)  # env.vectorization included
    else:
        check_vectorization(spec, own_env=True)
        if spec.evaluation.run_async:  # the evaluation process builds it too
            check_shippable(make_env, "evaluation.async")
        _check_own_env(spec, env_factory(spec, make_env))
    env = _vec_env(spec, spec.env.n_envs, spec.budget.seed, True, make_env)
    norm = spec.env.normalize
    if normalize_stats is not None:
        return VecNormalize.load(str(normalize_stats), env)
    if norm.obs or norm.reward:
        normalize = LeanVecNormalize if fast_paths().on else VecNormalize
        env = normalize(
            env,
            norm_obs=norm.obs,
            norm_obs_keys=normalized_keys(env.observation_space),
            norm_reward=norm.reward,
            clip_obs=norm.clip_obs,
            clip_reward=norm.clip_reward,
            gamma=spec.advantage.gamma,
        )
    return env


def eval_seed(spec: ExperimentSpec) -> int:
    """Eval env i starts every evaluation from eval_seed + i (apart from training's seeds)."""
    return spec.budget.seed + EVAL_SEED_OFFSET


def build_eval_env(spec: ExperimentSpec, make_env: EnvMaker | None = None) -> VecEnv:
    """min(episodes, EVAL_MAX_ENVS) in-process envs with their own seeds, evaluated together,
    wrapped exactly as the training env is.

    Observation statistics are shared with training (synced at each evaluation).
    """
    n_envs = min(spec.evaluation.episodes, EVAL_MAX_ENVS)
    env = _vec_env(spec, n_envs, eval_seed(spec), False, make_env)
    norm = spec.env.normalize
    if norm.obs or norm.reward:
        env = VecNormalize(
            env,
            training=False,
            norm_obs=norm.obs,
            norm_obs_keys=normalized_keys(env.observation_space),
            norm_reward=False,
            clip_obs=norm.clip_obs,
            gamma=spec.advantage.gamma,
        )
    return env


def build_play_env(
    spec: ExperimentSpec, seed: int, normalize_stats: Path | None, render_mode: str | None = None
) -> VecEnv:
    """One in-process env built as evaluation builds it, for watching, filming or exporting a
    trained policy: observations normalized with the run's statistics (`normalize_stats`, a
    file of the run's own folder), frozen; rewards left raw."""
    check_spec_env(spec)
    env = _vec_env(spec, 1, seed, False, None, render_mode)
    if normalize_stats is None:
        return env
    stats = VecNormalize.load(str(normalize_stats), env)
    stats.training, stats.norm_reward = False, False
    return stats


def vec_normalize_of(env: Any) -> VecNormalize | None:
    return env if isinstance(env, VecNormalize) else None
