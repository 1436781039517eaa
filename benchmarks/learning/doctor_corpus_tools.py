"""Helpers of the doctor corpus (benchmarks/learning/doctor_corpus.py): a spec's batch and the
doctor's cost on a stored run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.harness import measured


def batch_of(spec: Path, sets: list[str]) -> int:
    from ppo_platform.spec.workloads import load_any_spec

    loaded = load_any_spec(spec, sets)
    rollout = getattr(loaded, "rollout", None)
    env = getattr(loaded, "env", None)
    if rollout is None or env is None:
        return 1
    return int(rollout.n_steps) * int(env.n_envs)


def cost_per_update(home: Path, run_id: str, repeats: int = 20) -> dict[str, Any]:
    """The diagnosis timed in-process on one stored run's metric series: the median (min, max)
    thread-CPU ms of `diagnose` over `repeats` calls, and per update."""
    from ppo_platform.doctor import diagnose
    from ppo_platform.settings import Settings
    from ppo_platform.tracking.reads import stored_run

    metrics = stored_run(Settings(home=home).tracking_uri, run_id)["metrics"]
    updates = max((len(points) for points in metrics.values()), default=1)
    samples = sorted(
        measured(lambda: diagnose(metrics), "thread")[1]["cpu_s"] for _ in range(repeats)
    )
    median = samples[len(samples) // 2]
    return {
        "run_id": run_id,
        "updates": updates,
        "diagnose_ms": [round(1000 * x, 3) for x in (median, samples[0], samples[-1])],
        "ms_per_update": round(1000 * median / updates, 4),
    }
