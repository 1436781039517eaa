"""Memory admission counts the runs a job trains at once: a sweep's parallel members, a
compiled batch's seeds, and on the compiled path a sweep's parallel grid points with all their
seeds (one worker trains a point's seeds together)."""

from __future__ import annotations

from typing import Any

from ppo_platform.execution.local import default_workers
from ppo_platform.jobs.admission import job_memory
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.resources import estimate, known_observation_size

BASE: dict[str, Any] = {
    "name": "admitted",
    "env": {"id": "CartPole-v1", "n_envs": 4},
    "rollout": {"n_steps": 32},
    "update": {"epochs": 4, "minibatch_size": 64},
    "budget": {"total_timesteps": 4096},
}


def _one_run(data: dict[str, Any]) -> int:
    spec = ExperimentSpec.model_validate({k: v for k, v in data.items() if k != "sweep"})
    return estimate(spec, known_observation_size(spec) or 1).memory


def test_a_compiled_batch_counts_every_seed_and_a_torch_batch_one():
    seeds = {**BASE, "budget": {**BASE["budget"], "seeds": "0-7"}}
    per_run = _one_run({**BASE})
    assert job_memory({**seeds, "compiled": "auto"}, "seeds") == 8 * per_run
    assert job_memory({**seeds, "compiled": "off"}, "seeds") == per_run


def test_a_compiled_sweep_counts_each_parallel_points_seeds():
    sweep = {**BASE, "sweep": {"grid": {"update.epochs": [2, 4, 8]}, "seeds": [0, 1, 2, 3, 4]}}
    per_run = _one_run(BASE)
    workers = default_workers()
    compiled = job_memory({**sweep, "compiled": "auto"}, "sweep")
    assert compiled == per_run * 5 * max(1, min(3, workers))
    torch = job_memory({**sweep, "compiled": "off"}, "sweep")
    assert torch == per_run * max(1, min(15, workers))
    assert compiled > torch or workers >= 15
