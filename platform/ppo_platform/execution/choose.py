"""Which Executor runs the work: local processes (default) or a Ray cluster, by setting.

`PPO_PLATFORM_EXECUTOR=ray` with `PPO_PLATFORM_RAY_ADDRESS=host:port` sends jobs, sweep
members and tuning workers to the cluster; Ray is imported only then.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ppo_platform.execution.base import Executor
from ppo_platform.execution.isolated import IsolatedExecutor
from ppo_platform.execution.local import LocalExecutor
from ppo_platform.settings import Settings


def _ray(settings: Settings, torch_threads: int, fresh_process: bool) -> Executor:
    from ppo_platform.execution.ray_executor import RayExecutor

    return RayExecutor(
        settings.ray_address,
        torch_threads=torch_threads,
        num_cpus=settings.ray_num_cpus,
        num_gpus=settings.ray_num_gpus,
        fresh_process=fresh_process,
    )


def job_executor(settings: Settings, workers: int, torch_threads: int = 1) -> Executor:
    """For the job service: one fresh process per job (locally, or a fresh Ray worker)."""
    if settings.executor == "ray":
        return _ray(settings, torch_threads, fresh_process=True)
    return IsolatedExecutor(workers, torch_threads)


# What every sweep member and tuning trial imports (torch, SB3, the trainers): a local pool's
# fork server imports it once and each worker is forked with it (`execution/local.py`).
TRAINING_MODULES = ("ppo_platform.training.runner", "ppo_platform.training.warm")


def pool_executor(
    settings: Settings,
    workers: int,
    *,
    initializer: Callable[..., None] | None = None,
    initargs: tuple[Any, ...] = (),
) -> Executor:
    """For sweep members and tuning workers. On Ray the cluster's CPUs bound how many run at
    once and `initializer` is not run (its shared objects cannot cross machines)."""
    if settings.executor == "ray":
        return _ray(settings, settings.torch_threads, fresh_process=False)
    return LocalExecutor(
        workers,
        settings.torch_threads,
        initializer=initializer,
        initargs=initargs,
        preload=TRAINING_MODULES,
    )


def uses_ray(settings: Settings) -> bool:
    return settings.executor == "ray"
