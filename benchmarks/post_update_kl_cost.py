"""Per-update cost of the post-update KL (`train/approx_kl_post`): one extra forward pass.

The same model (specs/cartpole.yaml's values, one torch thread) runs its update on the same
collected rollout with the post-update KL and with the pass replaced by a constant; the two
variants alternate so machine noise hits both alike. Reported: median update time of each,
the difference, and the median time of collecting one rollout for scale.

    .venv/bin/python benchmarks/post_update_kl_cost.py --repeats 60
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import torch
from gymnasium import spaces
from torch import Tensor

from ppo_platform.spec.loader import load_spec
from ppo_platform.training.algorithms import ppo_kwargs
from ppo_platform.training.environments import build_train_env
from trainers.fast.rollout_buffer import RolloutTensors
from trainers.ppo import MonitoredPPO

REPO = Path(__file__).resolve().parents[1]
RESULT = REPO / "benchmarks" / "results" / "post_update_kl_cost.md"


class WithoutPostKL(MonitoredPPO):
    """The same update with the post-update forward pass replaced by a constant (benchmark only)."""

    def _post_update_kl(self, rollout: Any, discrete: bool) -> Tensor:
        return torch.zeros(())


def collected(cls: type[MonitoredPPO], spec_path: Path) -> tuple[MonitoredPPO, float]:
    """A model that has collected one rollout, and how long collecting it took."""
    spec = load_spec(spec_path)
    model = cls("MlpPolicy", build_train_env(spec), device="cpu", **ppo_kwargs(spec))
    _, callback = model._setup_learn(total_timesteps=spec.budget.total_timesteps, callback=None)
    start = time.perf_counter()
    model.collect_rollouts(model.env, callback, model.rollout_buffer, model.n_steps)
    return model, time.perf_counter() - start


def time_update(model: MonitoredPPO) -> float:
    model._current_progress_remaining = 0.5  # mid-run: lr and clip range as they would be
    start = time.perf_counter()
    model.train()
    return time.perf_counter() - start


def time_pass(model: MonitoredPPO) -> float:
    """The post-update KL pass alone, on the model's rollout."""
    rollout = RolloutTensors.for_buffer(model.rollout_buffer)
    start = time.perf_counter()
    model._post_update_kl(rollout, discrete=isinstance(model.action_space, spaces.Discrete))
    return time.perf_counter() - start


def _update_shape(model: MonitoredPPO) -> str:
    """'8 envs x 32 steps = 256 transitions, K = 20, minibatch 256: 20 gradient steps ...'."""
    batch = model.n_envs * model.n_steps
    steps = model.n_epochs * math.ceil(batch / model.batch_size)
    return (
        f"{model.n_envs} envs x {model.n_steps} steps = {batch} transitions, K = "
        f"{model.n_epochs}, minibatch {model.batch_size}: {steps} gradient steps per update"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, default=REPO / "specs" / "cartpole.yaml")
    parser.add_argument("--repeats", type=int, default=60)
    args = parser.parse_args()
    torch.set_num_threads(1)
    with_kl, rollout_seconds = collected(MonitoredPPO, args.spec)
    without, _ = collected(WithoutPostKL, args.spec)
    for model in (with_kl, without):  # warm-up
        time_update(model)
    timings: dict[str, list[float]] = {"with": [], "without": []}
    for i in range(args.repeats):
        order = [("with", with_kl), ("without", without)]
        for name, model in order if i % 2 == 0 else order[::-1]:
            timings[name].append(time_update(model))
        timings.setdefault("pass", []).append(time_pass(with_kl))
    med = {name: statistics.median(values) for name, values in timings.items()}
    cost = med["with"] - med["without"]
    lines = [
        "# Cost of the post-update KL (one extra forward pass per update)",
        "",
        f"`python benchmarks/post_update_kl_cost.py --repeats {args.repeats}` on "
        f"{args.spec.relative_to(REPO)} ({_update_shape(with_kl)}), one torch thread, torch "
        f"{torch.__version__}, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores (shared machine).",
        "",
        "| | median update time | |",
        "|---|---|---|",
        f"| update with `train/approx_kl_post` | {med['with'] * 1e3:.2f} ms | |",
        f"| update without it | {med['without'] * 1e3:.2f} ms | |",
        f"| difference | {cost * 1e3:.2f} ms | {100 * cost / med['without']:+.1f}% of the update |",
        f"| the extra pass alone | {med['pass'] * 1e3:.3f} ms | "
        f"{100 * med['pass'] / med['without']:.1f}% of the update |",
        f"| collecting one rollout (for scale) | {rollout_seconds * 1e3:.1f} ms | "
        f"the pass = {100 * med['pass'] / (med['without'] + rollout_seconds):.1f}% "
        "of an iteration |",
        "",
        f"Medians over {args.repeats} alternating updates of each variant on the same rollout; "
        "the pass alone is timed on the same model between updates.",
    ]
    RESULT.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
