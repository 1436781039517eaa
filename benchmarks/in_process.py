"""What the in-process benchmarks (per-step cost, per-member overhead) share: one platform
run of specs/cartpole.yaml without evaluation or checkpoints, and a median/min/max summary."""

from __future__ import annotations

import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def platform_run(steps: int) -> None:
    """`run_spec` on specs/cartpole.yaml for `steps` env steps, evaluation and checkpoints off."""
    from ppo_platform.spec.loader import load_spec
    from ppo_platform.training.runner import run_spec

    overrides = [f"budget.total_timesteps={steps}", "evaluation.every_timesteps=0"]
    overrides += ["evaluation.episodes=1", "checkpoints.every_timesteps=0"]
    run_spec(load_spec(ROOT / "specs" / "cartpole.yaml", overrides))


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}
