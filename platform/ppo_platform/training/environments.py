"""Vectorized gymnasium environments built from a spec (training env + evaluation env)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv, VecNormalize

from ppo_platform.spec.env_ids import check_spec_env
from ppo_platform.spec.experiment import ExperimentSpec

EVAL_SEED_OFFSET = 10_000
# Evaluation steps up to this many envs together (one batched forward pass per step); more
# episodes than that run several per env.
EVAL_MAX_ENVS = 16


def _vec_env(
    spec: ExperimentSpec,
    n_envs: int,
    seed: int,
    subproc: bool = True,
    render_mode: str | None = None,
) -> VecEnv:
    wants_subproc = subproc and spec.env.vectorization == "subproc" and n_envs > 1
    vec_cls = SubprocVecEnv if wants_subproc else DummyVecEnv
    # SB3 asks for render_mode="rgb_array" unless told otherwise; training renders nothing.
    kwargs = {"render_mode": render_mode, **spec.env.kwargs}
    return make_vec_env(
        spec.env.id, n_envs=n_envs, seed=seed, vec_env_cls=vec_cls, env_kwargs=kwargs
    )


def build_train_env(spec: ExperimentSpec, normalize_stats: Path | None = None) -> VecEnv:
    """N envs of the spec, wrapped in VecNormalize when asked (statistics restored if given)."""
    check_spec_env(spec)
    env = _vec_env(spec, spec.env.n_envs, spec.budget.seed)
    norm = spec.env.normalize
    if normalize_stats is not None:
        return VecNormalize.load(str(normalize_stats), env)
    if norm.obs or norm.reward:
        env = VecNormalize(
            env,
            norm_obs=norm.obs,
            norm_reward=norm.reward,
            clip_obs=norm.clip_obs,
            clip_reward=norm.clip_reward,
            gamma=spec.advantage.gamma,
        )
    return env


def eval_seed(spec: ExperimentSpec) -> int:
    """Eval env i starts every evaluation from eval_seed + i (apart from training's seeds)."""
    return spec.budget.seed + EVAL_SEED_OFFSET


def build_eval_env(spec: ExperimentSpec) -> VecEnv:
    """min(episodes, EVAL_MAX_ENVS) in-process envs with their own seeds, evaluated together.

    Observation statistics are shared with training (synced at each evaluation).
    """
    n_envs = min(spec.evaluation.episodes, EVAL_MAX_ENVS)
    env = _vec_env(spec, n_envs, eval_seed(spec), subproc=False)
    norm = spec.env.normalize
    if norm.obs or norm.reward:
        env = VecNormalize(
            env,
            training=False,
            norm_obs=norm.obs,
            norm_reward=False,
            clip_obs=norm.clip_obs,
            gamma=spec.advantage.gamma,
        )
    return env


def build_play_env(
    spec: ExperimentSpec, seed: int, normalize_stats: Path | None, render_mode: str | None = None
) -> VecEnv:
    """One in-process env built as evaluation builds it, for watching or filming a trained
    policy: observations normalized with the run's statistics (`normalize_stats`, a file of
    the run's own folder), frozen; rewards left raw."""
    env = _vec_env(spec, 1, seed, subproc=False, render_mode=render_mode)
    if normalize_stats is None:
        return env
    stats = VecNormalize.load(str(normalize_stats), env)
    stats.training, stats.norm_reward = False, False
    return stats


def vec_normalize_of(env: Any) -> VecNormalize | None:
    return env if isinstance(env, VecNormalize) else None
