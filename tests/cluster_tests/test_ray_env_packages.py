"""A sweep of an env from an env package, its members run as Ray tasks: the package named only
by PPO_PLATFORM_ENV_PACKAGES travels with each task (forwarded settings) and is imported on
the node before the env is built. The package is importable on every node (cluster_services)."""

from __future__ import annotations

import os

import pytest
from cluster_services import ENV_PACKAGES_DIR, Cluster
from env_package_fixtures import LOCAL_ENV, LOCAL_MODULE

from ppo_platform.settings import get_settings
from ppo_platform.spec.loader import validate_data

pytestmark = pytest.mark.slow


def test_a_sweep_of_an_env_package_env_runs_as_ray_tasks(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ppo_platform.sweeps import run_sweep

    monkeypatch.syspath_prepend(str(ENV_PACKAGES_DIR))  # the driver checks the env too
    monkeypatch.setenv("PPO_PLATFORM_ENV_PACKAGES", LOCAL_MODULE)
    get_settings.cache_clear()
    spec = validate_data(
        {
            "name": "ray-own-env",
            "env": {"id": LOCAL_ENV, "n_envs": 2},
            "rollout": {"n_steps": 32},
            "update": {"epochs": 2, "minibatch_size": 32},
            "budget": {"total_timesteps": 256, "seed": 0},
            "evaluation": {"every_timesteps": 128, "episodes": 2},
            "checkpoints": {"every_timesteps": 0},
            "sweep": {"grid": {"update.epochs": [1, 2]}, "seeds": [0]},
        }
    )
    result = run_sweep(spec, workers=2, report=False)
    assert [o.status for o in result.outcomes] == ["FINISHED"] * 2
    assert all(o.pid != os.getpid() for o in result.outcomes)  # ran in Ray workers
