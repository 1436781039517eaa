"""What the in-process benchmarks (per-step cost, per-member overhead) share: one platform run
of specs/cartpole.yaml without evaluation or checkpoints, and the plain script's training."""

from __future__ import annotations

from benchmarks.harness import ROOT
from benchmarks.overhead.plain_sb3_cartpole import train_plain


def platform_run(steps: int) -> None:
    """`run_spec` on specs/cartpole.yaml for `steps` env steps, evaluation and checkpoints off."""
    from ppo_platform.spec.loader import load_spec
    from ppo_platform.training.runner import run_spec

    overrides = [f"budget.total_timesteps={steps}", "evaluation.every_timesteps=0"]
    overrides += ["evaluation.episodes=1", "checkpoints.every_timesteps=0"]
    run_spec(load_spec(ROOT / "specs" / "cartpole.yaml", overrides))


def plain_run(steps: int) -> None:
    """The plain SB3 script's `learn` for `steps` env steps, in this process."""
    train_plain(steps)
